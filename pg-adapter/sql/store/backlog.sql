-- The backlog of the three loops and the current dead letters (PgStore::backlog, read for the
-- worker's tasklatch_backlog_* gauges). Read-only; `now` is a parameter, as everywhere.
--
-- Per loop, over the rows its claim would pick at $1 (the WHERE clause of poll_candidates.sql,
-- notify_candidates.sql and cancel_candidates.sql, word for word, so each is read through the
-- claim's own partial index: tasks_poll_due_v2, tasks_notify_due, tasks_cancel_due):
--   <loop>_due         rows due at $1, lease free or expired;
--   <loop>_overdue     of those, the rows due before $2 (due for longer than the threshold);
--   <loop>_oldest_due  the earliest due time among them, NULL when none is due.
-- Each count stops after $3 rows: a count equal to $3 means "at least $3".
--
-- Dead letters, now (not ever): a notification whose status is 'dead_letter', by its recorded
-- reason (a requeued one keeps the record but is no longer counted); a cancel whose status is
-- 'dead_letter', by cancel::dead_letter_reason (an outage keeps its start: 'unavailable', else
-- 'budget'). At most $3 dead-lettered rows are read: when there are more, each count is a lower
-- bound. No index holds the dead letters (none of the claims' indexes does): this part reads
-- the table until it has found $3 of them.
-- $1 now, $2 overdue before (now minus the threshold), $3 cap.
WITH dead AS (
    SELECT
        CASE WHEN notify_status = 'dead_letter' THEN dead_letter_reason END AS notify_reason,
        CASE WHEN cancel_status <> 'dead_letter' THEN NULL
             WHEN cancel_unavailable_since IS NULL THEN 'budget'
             ELSE 'unavailable' END AS cancel_reason
    FROM tasks
    WHERE notify_status = 'dead_letter' OR cancel_status = 'dead_letter'
    LIMIT $3
)
SELECT
    -- the poll loop
    (SELECT count(*) FROM (
        SELECT 1 FROM tasks
        WHERE remote_status IN ('submitted', 'working', 'input_required')
          AND cancel_status <> 'requested'
          AND poll_next_at <= $1
          AND (poll_lease_expires_at IS NULL OR poll_lease_expires_at <= $1)
        LIMIT $3
    ) AS due) AS poll_due,
    (SELECT count(*) FROM (
        SELECT 1 FROM tasks
        WHERE remote_status IN ('submitted', 'working', 'input_required')
          AND cancel_status <> 'requested'
          AND poll_next_at <= $1
          AND (poll_lease_expires_at IS NULL OR poll_lease_expires_at <= $1)
          AND poll_next_at < $2
        LIMIT $3
    ) AS overdue) AS poll_overdue,
    (SELECT poll_next_at FROM tasks
        WHERE remote_status IN ('submitted', 'working', 'input_required')
          AND cancel_status <> 'requested'
          AND poll_next_at <= $1
          AND (poll_lease_expires_at IS NULL OR poll_lease_expires_at <= $1)
        ORDER BY poll_next_at, id
        LIMIT 1) AS poll_oldest_due,
    -- the notify loop
    (SELECT count(*) FROM (
        SELECT 1 FROM tasks
        WHERE notify_status IN ('pending', 'claimed', 'retry', 'dispatched')
          AND event_version > notified_version
          AND notify_due_at <= $1
          AND (notify_lease_expires_at IS NULL OR notify_lease_expires_at <= $1)
        LIMIT $3
    ) AS due) AS notify_due,
    (SELECT count(*) FROM (
        SELECT 1 FROM tasks
        WHERE notify_status IN ('pending', 'claimed', 'retry', 'dispatched')
          AND event_version > notified_version
          AND notify_due_at <= $1
          AND (notify_lease_expires_at IS NULL OR notify_lease_expires_at <= $1)
          AND notify_due_at < $2
        LIMIT $3
    ) AS overdue) AS notify_overdue,
    (SELECT notify_due_at FROM tasks
        WHERE notify_status IN ('pending', 'claimed', 'retry', 'dispatched')
          AND event_version > notified_version
          AND notify_due_at <= $1
          AND (notify_lease_expires_at IS NULL OR notify_lease_expires_at <= $1)
        ORDER BY notify_due_at, id
        LIMIT 1) AS notify_oldest_due,
    -- the cancel loop
    (SELECT count(*) FROM (
        SELECT 1 FROM tasks
        WHERE cancel_status = 'requested'
          AND cancel_due_at <= $1
          AND (cancel_lease_expires_at IS NULL OR cancel_lease_expires_at <= $1)
        LIMIT $3
    ) AS due) AS cancel_due,
    (SELECT count(*) FROM (
        SELECT 1 FROM tasks
        WHERE cancel_status = 'requested'
          AND cancel_due_at <= $1
          AND (cancel_lease_expires_at IS NULL OR cancel_lease_expires_at <= $1)
          AND cancel_due_at < $2
        LIMIT $3
    ) AS overdue) AS cancel_overdue,
    (SELECT cancel_due_at FROM tasks
        WHERE cancel_status = 'requested'
          AND cancel_due_at <= $1
          AND (cancel_lease_expires_at IS NULL OR cancel_lease_expires_at <= $1)
        ORDER BY cancel_due_at, id
        LIMIT 1) AS cancel_oldest_due,
    -- the dead letters
    d.dl_notify_thread_gone, d.dl_notify_budget, d.dl_notify_unavailable,
    d.dl_cancel_budget, d.dl_cancel_unavailable
FROM (
    SELECT
        count(*) FILTER (WHERE notify_reason = 'thread_gone') AS dl_notify_thread_gone,
        count(*) FILTER (WHERE notify_reason = 'budget') AS dl_notify_budget,
        count(*) FILTER (WHERE notify_reason = 'unavailable') AS dl_notify_unavailable,
        count(*) FILTER (WHERE cancel_reason = 'budget') AS dl_cancel_budget,
        count(*) FILTER (WHERE cancel_reason = 'unavailable') AS dl_cancel_unavailable
    FROM dead
) AS d
