-- Retention finds the jobs that finished longest ago without reading the queued and running ones.
CREATE INDEX jobs_finished ON jobs (updated_at) WHERE status IN ('succeeded', 'failed');
