-- Issue 51: forgetting a memory clears the mark of the live memories it superseded (erase.ts, "unmarked"), which
-- found them by reading every memory of every project: no index led with superseded_by. Only marked, live rows
-- are entered (a new memory has no mark), so writes pay nothing for it.
CREATE INDEX memories_superseded ON memories (superseded_by) WHERE superseded_by IS NOT NULL AND deleted_at IS NULL;
