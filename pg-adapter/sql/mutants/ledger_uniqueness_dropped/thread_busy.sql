-- PLANTED BUG LedgerUniquenessDropped: whether a run is active on the thread (409).
-- $1 thread.
SELECT 1 FROM runs WHERE thread = $1 AND status IN ('pending', 'running') LIMIT 1
