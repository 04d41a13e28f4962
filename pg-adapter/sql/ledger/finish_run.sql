-- Ends an active run with a terminal status; no row changes for an unknown or ended run.
-- $1 run id, $2 terminal status, $3 now.
UPDATE runs SET status = $2, finished_at = $3
WHERE run_id = $1 AND status IN ('pending', 'running')
