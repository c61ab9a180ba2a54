-- Issue 54: GET /memory lists an end user's live memories by creation or last change, either way, a page at a
-- time after a cursor (the last row's time and id): each page is a range of one of these indexes, O(page).
CREATE INDEX memories_owner_created ON memories (project_id, tenant_id, end_user_id, created_at, id) WHERE deleted_at IS NULL;
CREATE INDEX memories_owner_updated ON memories (project_id, tenant_id, end_user_id, updated_at, id) WHERE deleted_at IS NULL;
