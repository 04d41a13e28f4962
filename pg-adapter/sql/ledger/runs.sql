-- Every run, in creation order.
SELECT run_id, key, owner, thread, prompt, status, created_at, finished_at
FROM runs
ORDER BY seq
