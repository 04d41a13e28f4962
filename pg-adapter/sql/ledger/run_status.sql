-- A run's status (no row: an unknown run).
-- $1 run id.
SELECT status FROM runs WHERE run_id = $1
