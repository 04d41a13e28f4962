        -- The poll loop's rescheduling in release.sql (poll::release): due again at retry_at,
        -- but a terminal task keeps its schedule (it is not polled again). Never counts a
        -- failure.
        poll_next_at = CASE
            WHEN task.remote_status IN ('completed', 'failed', 'cancelled') THEN task.poll_next_at
            ELSE checked.retry_at END
