-- PLANTED BUG LedgerUniquenessDropped: a new running run, whatever the key — the key is never
-- looked up and no unique index stops a second run for it.
-- $1 key, $2 owner, $3 thread, $4 prompt, $5 now.
INSERT INTO runs (seq, run_id, key, owner, thread, prompt, status, created_at)
SELECT n, 'run-' || n, $1, $2, $3, $4, 'running', $5
FROM (SELECT nextval('run_seq') AS n) AS next_run
RETURNING run_id
