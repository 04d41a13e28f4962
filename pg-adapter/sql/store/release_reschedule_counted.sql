        -- The notify and cancel loops' rescheduling in release.sql (outbox::release,
        -- cancel::release; the loop's prefix filled in by sql.rs): due again at retry_at, and an
        -- error counts a failure.
        {loop}_due_at = checked.retry_at,
        {loop}_failures = CASE
            WHEN checked.error IS NOT NULL THEN task.{loop}_failures + 1
            ELSE task.{loop}_failures END,
        {loop}_last_error = CASE
            WHEN checked.error IS NOT NULL THEN checked.error
            ELSE task.{loop}_last_error END
