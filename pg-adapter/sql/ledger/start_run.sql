-- Starts a run in one round trip: tasklatch_start_run (migrations/0003) answers 'started' with
-- the run (new, or the known key's), 'busy' (409) or 'thread_gone' (404).
-- $1 key, $2 owner, $3 thread, $4 prompt, $5 now.
SELECT outcome, started_run FROM tasklatch_start_run($1, $2, $3, $4, $5)
