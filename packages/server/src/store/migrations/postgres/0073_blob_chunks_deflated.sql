-- A chunk of the database blob store (store/blobs/database-blobs.ts) may be stored deflated (raw DEFLATE).
ALTER TABLE blob_chunks ADD COLUMN deflated BOOLEAN NOT NULL DEFAULT false;
