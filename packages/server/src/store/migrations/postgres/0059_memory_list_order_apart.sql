-- The list's indexes (0058) lead with the owner's columns, as the duplicate lookup's unique indexes do: a
-- PostgreSQL planner without statistics for the owner's rows costed both alike and probed duplicates through
-- the list's index, reading every memory of the owner. A predicate only the list states (`id > 0`, true of
-- every row) keeps these indexes for the list alone.
DROP INDEX memories_owner_created;
DROP INDEX memories_owner_updated;
CREATE INDEX memories_owner_created ON memories (project_id, tenant_id, end_user_id, created_at, id) WHERE deleted_at IS NULL AND id > 0;
CREATE INDEX memories_owner_updated ON memories (project_id, tenant_id, end_user_id, updated_at, id) WHERE deleted_at IS NULL AND id > 0;
