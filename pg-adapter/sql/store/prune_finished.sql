-- Retention (core transitions::retention::prunable): deletes up to $3 settled, finished rows,
-- oldest remote update first, and their ended runs in the run ledger; one statement, one
-- transaction. Rows a concurrent transaction holds are skipped (SKIP LOCKED), and a row
-- changed since the snapshot is checked again against its new version before it is locked.
-- Candidates are read in order from tasks_finished (remote_updated_at, id WHERE terminal;
-- migration 0009).
--
-- A row goes when: its remote task is terminal, its remote state last changed and its
-- notification last settled (notify_settled_at, migration 0023) before $2, a dead letter
-- became one before $4 (NULL: unknown, kept), every event version is settled (notified_version = event_version: delivered, dropped or
-- dead-lettered), no dispatch is in flight, no cancel is still to do, and no lease is held at
-- $1. Its runs go with it: the ledger's keys are `task:{id}:{version}:{attempt}` (a byte
-- range of the unique key index, COLLATE "C": ';' follows ':'); a run still pending or running
-- stays (it still holds its thread).
--
-- $1 now, $2 finished_before, $3 limit, $4 dead_letters_before. Returns the tasks and the runs deleted.
WITH doomed AS (
    SELECT id
    FROM tasks
    WHERE remote_status IN ('completed', 'failed', 'cancelled')
      AND remote_updated_at < $2
      AND (notify_settled_at IS NULL OR notify_settled_at < $2)
      AND (notify_status <> 'dead_letter' OR notify_settled_at < $4)
      AND event_version = notified_version
      AND notify_status NOT IN ('claimed', 'dispatched', 'retry')
      AND cancel_status <> 'requested'
      AND (poll_lease_expires_at IS NULL OR poll_lease_expires_at <= $1)
      AND (notify_lease_expires_at IS NULL OR notify_lease_expires_at <= $1)
      AND (cancel_lease_expires_at IS NULL OR cancel_lease_expires_at <= $1)
    ORDER BY remote_updated_at, id
    LIMIT $3
    FOR UPDATE SKIP LOCKED
),
gone AS (
    DELETE FROM tasks t
    USING doomed d
    WHERE t.id = d.id
    RETURNING t.id
),
runs_gone AS (
    DELETE FROM runs r
    USING gone g
    WHERE r.key >= 'task:' || g.id || ':'
      AND r.key < 'task:' || g.id || ';'
      AND r.status NOT IN ('pending', 'running')
    RETURNING r.seq
)
SELECT
    (SELECT count(*) FROM gone) AS tasks,
    (SELECT count(*) FROM runs_gone) AS runs
