-- "Which runs are still pending or running, oldest first?" (PgLedger::active_runs: what an
-- agent runtime polls for). Served in order by this partial index, so a poll reads the active
-- runs and stops at its limit. Without it the query went through runs_active_on_thread, whose
-- bitmap scan cannot skip the entries of runs that have ended since the last vacuum: under a
-- steady stream of runs every poll re-read every run ended since then, and sorted the rest.
CREATE INDEX runs_active_by_seq ON runs (seq) WHERE status IN ('pending', 'running');
