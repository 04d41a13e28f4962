-- Answers to input requests (core transitions::answer): the user's latest answer on
-- the task row and where sending it is. Sending rides the poll claim (no lease of its own):
-- answer_attempt_token is the poll claim's token that marked the attempt. answer_text is the
-- answer itself (secret-like, dropped once an attempt has an outcome). Existing rows get no
-- answer.
ALTER TABLE tasks
    ADD COLUMN answer_request_id    text COLLATE "C",
    ADD COLUMN answer_text          text,
    ADD COLUMN answer_status        text NOT NULL DEFAULT 'none',
    ADD COLUMN answer_recorded_at   bigint,
    ADD COLUMN answer_attempt_token bigint,
    ADD COLUMN answer_error         text,
    ADD CONSTRAINT tasks_answer_status CHECK (answer_status IN
        ('none', 'pending', 'sending', 'sent', 'unconfirmed', 'failed')),
    ADD CONSTRAINT tasks_answer_request_id_len CHECK (char_length(answer_request_id) BETWEEN 1 AND 64),
    ADD CONSTRAINT tasks_answer_text_len CHECK (octet_length(answer_text) BETWEEN 1 AND 16384),
    ADD CONSTRAINT tasks_answer_error_len CHECK (char_length(answer_error) <= 4000),
    ADD CONSTRAINT tasks_answer_token CHECK (answer_attempt_token >= 0),
    -- text only while the answer waits or is being sent
    ADD CONSTRAINT tasks_answer_text_while_unsent CHECK (
        answer_text IS NULL OR answer_status IN ('pending', 'sending')),
    ADD CONSTRAINT tasks_answer_recorded CHECK (
        (answer_status = 'none') = (answer_request_id IS NULL)
        AND (answer_request_id IS NULL) = (answer_recorded_at IS NULL));
