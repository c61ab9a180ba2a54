-- A pending invitation can be revoked (DELETE /org/invitations/{id}): its link stops working.
ALTER TABLE invitations ADD COLUMN revoked_at TEXT;
ALTER TABLE invitations ADD COLUMN revoked_by INTEGER REFERENCES users(id);
