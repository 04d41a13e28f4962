-- Ends many active runs in one statement, as finish_run.sql one by one.
-- $1 run ids, $2 their terminal statuses, $3 now.
UPDATE runs SET status = ending.status, finished_at = $3
FROM unnest($1::text[], $2::text[]) AS ending(run_id, status)
WHERE runs.run_id = ending.run_id AND runs.status IN ('pending', 'running')
