-- The runs still pending or running, oldest first, through the index runs_active_by_seq.
-- $1 limit.
SELECT run_id, created_at FROM runs
WHERE status IN ('pending', 'running')
ORDER BY seq
LIMIT $1
