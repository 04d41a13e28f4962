-- Starts a batch of runs in one transaction: tasklatch_start_runs (migrations/0004) answers
-- request i exactly as tasklatch_start_run would, if the requests came one after another in
-- array order; one row per request, ord = its 1-based position.
-- $1 keys, $2 owners, $3 threads, $4 prompts, $5 nows.
SELECT ord, outcome, started_run FROM tasklatch_start_runs($1, $2, $3, $4, $5)
ORDER BY ord
