-- Issue 53: a stored vector names the hash of the text it was computed from, so that the same text
-- in the same project (a repeated memory, another end user's copy) reuses it instead of a provider
-- call. The vector is erased with its memory as before; a reuse reads only live rows.
ALTER TABLE memory_embeddings ADD COLUMN text_hash TEXT;
CREATE INDEX memory_embeddings_text_hash ON memory_embeddings (embedder, project_id, text_hash);
