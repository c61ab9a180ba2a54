-- A foreign-key check locks the row it references (FOR KEY SHARE). memories.project_id made every
-- write of a project join one shared lock on the project's row (a multixact rebuilt by each
-- concurrent writer, with a logged lock record), and memory_history.memory_id logged a lock on each
-- new memory's row: together a sixth of the database's time per bulk memory. Neither parent is ever
-- deleted (projects and memories are tombstoned) and both ids come from the writing request's own
-- scope and transaction. The other references to memories (feedback, relations, decisions) stay.
ALTER TABLE memories DROP CONSTRAINT memories_project_id_fkey;
ALTER TABLE memory_history DROP CONSTRAINT memory_history_memory_id_fkey;
