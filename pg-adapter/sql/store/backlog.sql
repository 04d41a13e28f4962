-- The backlog of the three loops and the current dead letters (PgStore::backlog, read for the
-- worker's tasklatch_backlog_* gauges). Read-only; `now` is a parameter, as everywhere.
--
-- Per loop, over the rows its claim would pick at $1 (the WHERE clause of poll_candidates.sql,
-- notify_candidates.sql and cancel_candidates.sql, word for word, so each is read through the
-- claim's own partial index: tasks_poll_due_v2, tasks_notify_due, tasks_cancel_due):
--   <loop>_due         rows due at $1, lease free or expired;
--   <loop>_overdue     of those, the rows due before $2 (due for longer than the threshold);
--   <loop>_oldest_due  the earliest due time among them, NULL when none is due.
-- Each loop's due rows are read once, earliest first, at most $3 of them: a count equal to $3
-- means "at least $3", and the overdue rows (the earliest) are counted before the cap bites.
--
-- Dead letters, now (not ever): a notification whose status is 'dead_letter', by its recorded
-- reason (a requeued one keeps the record but is no longer counted); a cancel whose status is
-- 'dead_letter', by cancel::dead_letter_reason (an outage keeps its start: 'unavailable', else
-- 'budget'). At most $3 dead-lettered rows are read: when there are more, each count is a lower
-- bound. They are read through tasks_dead_letters (migration 0026), whose condition the WHERE
-- below repeats.
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
),
poll AS (
    SELECT poll_next_at AS due_at FROM tasks
    WHERE remote_status IN ('submitted', 'working', 'input_required')
      AND cancel_status <> 'requested'
      AND poll_next_at <= $1
      AND (poll_lease_expires_at IS NULL OR poll_lease_expires_at <= $1)
    ORDER BY poll_next_at, id
    LIMIT $3
),
notify AS (
    SELECT notify_due_at AS due_at FROM tasks
    WHERE notify_status IN ('pending', 'claimed', 'retry', 'dispatched')
      AND event_version > notified_version
      AND notify_due_at <= $1
      AND (notify_lease_expires_at IS NULL OR notify_lease_expires_at <= $1)
    ORDER BY notify_due_at, id
    LIMIT $3
),
cancel AS (
    SELECT cancel_due_at AS due_at FROM tasks
    WHERE cancel_status = 'requested'
      AND cancel_due_at <= $1
      AND (cancel_lease_expires_at IS NULL OR cancel_lease_expires_at <= $1)
    ORDER BY cancel_due_at, id
    LIMIT $3
)
SELECT
    p.due AS poll_due, p.overdue AS poll_overdue, p.oldest AS poll_oldest_due,
    n.due AS notify_due, n.overdue AS notify_overdue, n.oldest AS notify_oldest_due,
    c.due AS cancel_due, c.overdue AS cancel_overdue, c.oldest AS cancel_oldest_due,
    d.dl_notify_thread_gone, d.dl_notify_budget, d.dl_notify_unavailable,
    d.dl_cancel_budget, d.dl_cancel_unavailable
FROM
    (SELECT count(*) AS due, count(*) FILTER (WHERE due_at < $2) AS overdue,
            min(due_at) AS oldest FROM poll) AS p,
    (SELECT count(*) AS due, count(*) FILTER (WHERE due_at < $2) AS overdue,
            min(due_at) AS oldest FROM notify) AS n,
    (SELECT count(*) AS due, count(*) FILTER (WHERE due_at < $2) AS overdue,
            min(due_at) AS oldest FROM cancel) AS c,
    (SELECT
        count(*) FILTER (WHERE notify_reason = 'thread_gone') AS dl_notify_thread_gone,
        count(*) FILTER (WHERE notify_reason = 'budget') AS dl_notify_budget,
        count(*) FILTER (WHERE notify_reason = 'unavailable') AS dl_notify_unavailable,
        count(*) FILTER (WHERE cancel_reason = 'budget') AS dl_cancel_budget,
        count(*) FILTER (WHERE cancel_reason = 'unavailable') AS dl_cancel_unavailable
    FROM dead) AS d
