-- A peer that cannot be reached, times out or answers 5xx is waited out, never counted against
-- a failure budget (DOMAIN §3, §6): each of the notification and the cancel work records when
-- its current unavailability episode began (microseconds; NULL when the peer last answered)
-- and how many calls in a row went unanswered (the exponent of its backoff). Only an episode
-- that has lasted engine.max_unavailable_ms ends the work, as a dead letter of its own reason,
-- 'unavailable'.
ALTER TABLE tasks ADD COLUMN notify_unavailable_since bigint;
ALTER TABLE tasks ADD COLUMN notify_outages bigint NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN cancel_unavailable_since bigint;
ALTER TABLE tasks ADD COLUMN cancel_outages bigint NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD CONSTRAINT tasks_outages CHECK (
    notify_outages BETWEEN 0 AND 4294967295 AND cancel_outages BETWEEN 0 AND 4294967295);
ALTER TABLE tasks DROP CONSTRAINT tasks_dead_letter_reason;
ALTER TABLE tasks ADD CONSTRAINT tasks_dead_letter_reason CHECK (dead_letter_reason IN
    ('thread_gone', 'budget', 'unavailable'));
