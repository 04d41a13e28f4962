-- The statuses of many runs in one read (unknown runs have no row).
-- $1 run ids.
SELECT run_id, status FROM runs WHERE run_id = ANY($1)
