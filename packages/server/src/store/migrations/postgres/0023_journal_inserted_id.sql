-- The id of the row a grouped insert (core/grouped-statements.ts#groupedInsert) inserted for an idempotent request's
-- write, recorded in the same statement: its sealed result was sealed before the id existed, so the result read
-- back at a retry takes it from here (http/idempotency.ts). Null when every sealed result is whole.
ALTER TABLE idempotency_keys ADD COLUMN committed_id BIGINT;
