-- Issue 53: the personal facts a configured chat model read from a memory (modules/intelligence/model-reading.ts),
-- stored once per memory and model so that every view of its end user, in every process, uses them without asking
-- the model again. text_hash names the text and speaker they were read from: a memory whose text changed is read
-- again, and the same text in the same project reuses them. Erased with the memory, like its vectors.
CREATE TABLE memory_model_facts (
  memory_id  INTEGER NOT NULL REFERENCES memories(id),
  model      TEXT NOT NULL,
  project_id TEXT NOT NULL,
  text_hash  TEXT NOT NULL,
  facts      TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (memory_id, model)
);
CREATE INDEX memory_model_facts_text_hash ON memory_model_facts (model, project_id, text_hash);
