-- Issue 49: an export or import made by an API key runs its job as that key (audit rows name it), not as a user of the same id.
ALTER TABLE exports ADD COLUMN created_by_type TEXT NOT NULL DEFAULT 'user';
ALTER TABLE imports ADD COLUMN created_by_type TEXT NOT NULL DEFAULT 'user';
