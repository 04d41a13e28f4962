-- Operator counts, one scan of the table.
SELECT
    count(*) AS tasks,
    count(*) FILTER (WHERE notify_status = 'none') AS s_none,
    count(*) FILTER (WHERE notify_status = 'pending') AS s_pending,
    count(*) FILTER (WHERE notify_status = 'claimed') AS s_claimed,
    count(*) FILTER (WHERE notify_status = 'dispatched') AS s_dispatched,
    count(*) FILTER (WHERE notify_status = 'retry') AS s_retry,
    count(*) FILTER (WHERE notify_status = 'delivered') AS s_delivered,
    count(*) FILTER (WHERE notify_status = 'dead_letter') AS s_dead_letter,
    count(*) FILTER (WHERE dead_letter_reason = 'thread_gone') AS dl_thread_gone,
    count(*) FILTER (WHERE dead_letter_reason = 'budget') AS dl_budget,
    count(*) FILTER (WHERE dead_letter_reason = 'unavailable') AS dl_unavailable,
    count(*) FILTER (WHERE cancel_status = 'dead_letter') AS cancel_dead_letters,
    count(*) FILTER (WHERE event_version > notified_version) AS undelivered,
    COALESCE(sum(busy_count), 0)::bigint AS busy_total
FROM tasks
