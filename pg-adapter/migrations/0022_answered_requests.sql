-- Every answered request id of a task's current input request (core task::AnswerState::answered,
-- DOMAIN §6): a second answer to any of them is refused, not only to the latest. Oldest first,
-- at most 32 ids (policy::MAX_ANSWERED_REQUESTS; at the limit every further answer is refused).
-- Existing rows remember the one id they kept (answer_request_id).
ALTER TABLE tasks
    ADD COLUMN answer_answered_ids text[] COLLATE "C" NOT NULL DEFAULT '{}',
    ADD CONSTRAINT tasks_answer_answered_ids_len CHECK (
        cardinality(answer_answered_ids) <= 32
        AND array_position(answer_answered_ids, NULL) IS NULL);
UPDATE tasks SET answer_answered_ids = ARRAY[answer_request_id]
WHERE answer_request_id IS NOT NULL;
