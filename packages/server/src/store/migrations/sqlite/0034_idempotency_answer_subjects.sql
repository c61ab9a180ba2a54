-- A stored answer naming memories (or answering for an end user) is erased with them: the subjects an answer
-- names, found by subject without reading the stored answers (core/idempotency-keys.ts#eraseStoredAnswers).
ALTER TABLE idempotency_keys ADD COLUMN erased_at TEXT;
CREATE TABLE idempotency_answer_subjects (
  subject    TEXT NOT NULL,
  principal  TEXT NOT NULL,
  key_hash   TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  PRIMARY KEY (subject, principal, key_hash)
);
CREATE INDEX idempotency_answer_subjects_expiry ON idempotency_answer_subjects (expires_at);
CREATE INDEX idempotency_answer_subjects_key ON idempotency_answer_subjects (principal, key_hash);
