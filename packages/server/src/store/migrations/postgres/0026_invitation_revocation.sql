-- A pending invitation can be revoked (DELETE /org/invitations/{id}): its link stops working.
ALTER TABLE invitations ADD COLUMN revoked_at TIMESTAMPTZ;
ALTER TABLE invitations ADD COLUMN revoked_by BIGINT REFERENCES users(id);
