-- Records the user's answer in scope (transitions::answer::record; the shape was validated
-- before). The task row is locked; it changes only when the outcome is 'recorded': the task is
-- input_required, no cancel was requested, its latest input request names '[' || id || ']', the
-- request is not among the answered ids the input request still names (answer_answered_ids,
-- pruned to those; at 32 of them — policy::MAX_ANSWERED_REQUESTS — every answer is refused as
-- already answered), and no other answer waits. Then the id is appended to the pruned set and
-- the poll is due now (no later than it was). Returns the outcome ('not_asked', 'already_answered', 'another_pending',
-- 'recorded'); no row when no task of the caller's has that id. A recorded answer wakes the
-- workers through the `answer` trigger of migration 0007 (delivered at commit), so the poll
-- that sends it starts at once.
-- $1 owner, $2 thread, $3 task id, $4 request id, $5 answer, $6 now.
WITH matched AS (
    SELECT id, remote_status, remote_input_request, cancel_requested_at, answer_status,
        answer_answered_ids
    FROM tasks
    WHERE id = $3 AND owner = $1 AND thread = $2
    FOR UPDATE
),
still_asked AS (
    SELECT matched.id, ARRAY(
        SELECT answered.id
        FROM unnest(matched.answer_answered_ids) WITH ORDINALITY AS answered(id, ord)
        WHERE strpos(coalesce(matched.remote_input_request, ''), '[' || answered.id || ']') > 0
        ORDER BY answered.ord
    ) AS answered
    FROM matched
),
decided AS (
    SELECT matched.id, still_asked.answered,
        CASE
            WHEN matched.remote_status <> 'input_required'
              OR matched.cancel_requested_at IS NOT NULL
              OR matched.remote_input_request IS NULL
              OR strpos(matched.remote_input_request, '[' || $4::text || ']') = 0
            THEN 'not_asked'
            WHEN $4::text = ANY(still_asked.answered) OR cardinality(still_asked.answered) >= 32
            THEN 'already_answered'
            WHEN matched.answer_status IN ('pending', 'sending') THEN 'another_pending'
            ELSE 'recorded'
        END AS outcome
    FROM matched JOIN still_asked ON still_asked.id = matched.id
),
recorded AS (
    UPDATE tasks AS task SET
        answer_request_id = $4::text,
        answer_answered_ids = decided.answered || $4::text,
        answer_text = $5::text,
        answer_status = 'pending',
        answer_recorded_at = $6,
        answer_attempt_token = NULL,
        answer_error = NULL,
        poll_next_at = CASE
            WHEN task.poll_next_at IS NULL THEN NULL
            ELSE LEAST(task.poll_next_at, $6) END
    FROM decided
    WHERE task.id = decided.id AND decided.outcome = 'recorded'
    RETURNING task.id
)
SELECT decided.outcome, recorded.id IS NOT NULL AS updated
FROM decided LEFT JOIN recorded ON recorded.id = decided.id
