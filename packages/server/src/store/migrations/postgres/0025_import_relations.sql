-- An import of Engram's export format restores the relations it carries (include: ["relations"]):
-- how many it created, and how many it skipped (present already, or a memory at either end did not land).
ALTER TABLE imports ADD COLUMN relations_created INTEGER NOT NULL DEFAULT 0;
ALTER TABLE imports ADD COLUMN relations_skipped INTEGER NOT NULL DEFAULT 0;
