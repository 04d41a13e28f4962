-- Polls brought forward (transitions::poll_sooner): up to $6 pollable tasks -- of server $1
-- (every server when NULL), with no cancel work in progress, their poll lease free at $3, next
-- due after $4, and when $2 only those whose last poll failed -- in (next poll, id) order, the
-- k-th (0-based) due no later than $4 + k * $5. Nothing else changes; rows a concurrent call
-- holds are skipped. Returns the selected count and how many moved earlier.
-- $1 server or NULL, $2 backed off only, $3 now, $4 from, $5 spacing (microseconds), $6 limit.
WITH chosen AS (
    SELECT id, poll_next_at,
        $4::bigint + (row_number() OVER (ORDER BY poll_next_at, id) - 1) * $5::bigint AS slot
    FROM (
        SELECT id, poll_next_at FROM tasks
        WHERE remote_status IN ('submitted', 'working', 'input_required')
          AND cancel_status <> 'requested'
          AND ($1::text IS NULL OR server = $1::text)
          AND (NOT $2::bool OR poll_consecutive_errors > 0)
          AND (poll_lease_expires_at IS NULL OR poll_lease_expires_at <= $3::bigint)
          AND poll_next_at > $4::bigint
        ORDER BY poll_next_at, id
        LIMIT $6
        FOR UPDATE SKIP LOCKED
    ) AS due_later
),
moved AS (
    UPDATE tasks AS task SET poll_next_at = chosen.slot
    FROM chosen
    WHERE task.id = chosen.id AND chosen.slot < chosen.poll_next_at
    RETURNING task.id
)
SELECT (SELECT count(*) FROM chosen) AS selected, (SELECT count(*) FROM moved) AS moved
