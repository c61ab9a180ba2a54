-- Issue 46.7: a claim names the presence of the process that made it (store/presence.ts), so a retry
-- after that process died (kill -9) takes the claim over at once instead of waiting out its lease.
ALTER TABLE idempotency_keys ADD COLUMN claimer TEXT;
