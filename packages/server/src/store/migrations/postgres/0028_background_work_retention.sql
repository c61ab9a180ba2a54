-- Retention finds the jobs and connector syncs that finished longest ago without reading the queued and running ones.
CREATE INDEX jobs_finished ON jobs (updated_at) WHERE status IN ('succeeded', 'failed');
CREATE INDEX connector_syncs_finished ON connector_syncs (finished_at) WHERE status NOT IN ('queued', 'running');
