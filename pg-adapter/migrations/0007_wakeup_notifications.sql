-- Instant wake-ups: every write that gives a worker something to do sends
-- `pg_notify('tasklatch_wakeup', <kind>)` inside the writing transaction, so Postgres delivers
-- it at commit and never for a rolled-back write (the worker's `wakeup` module listens; polling
-- stays the fallback). Kinds: `submit` (a new task: its first poll, or the notification of a
-- task born finished), `event` (a new event version: a notification is due), `cancel` (a cancel
-- was requested), `answer` (a user's answer to an input request waits to be sent). Notifications with the same payload in one transaction are sent once, so a
-- batch write of many rows costs one notification per kind. The WHEN clauses keep every other
-- write (lease claims, releases, schedules) free of notifications.

CREATE FUNCTION tasklatch_wakeup() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('tasklatch_wakeup', TG_ARGV[0]);
    RETURN NULL;
END
$$;

CREATE TRIGGER tasks_wakeup_submit
    AFTER INSERT ON tasks
    FOR EACH ROW EXECUTE FUNCTION tasklatch_wakeup('submit');

CREATE TRIGGER tasks_wakeup_event
    AFTER UPDATE OF event_version ON tasks
    FOR EACH ROW WHEN (NEW.event_version > OLD.event_version)
    EXECUTE FUNCTION tasklatch_wakeup('event');

CREATE TRIGGER tasks_wakeup_cancel
    AFTER UPDATE OF cancel_requested_at ON tasks
    FOR EACH ROW WHEN (OLD.cancel_requested_at IS NULL AND NEW.cancel_requested_at IS NOT NULL)
    EXECUTE FUNCTION tasklatch_wakeup('cancel');

CREATE TRIGGER tasks_wakeup_answer
    AFTER UPDATE OF answer_status ON tasks
    FOR EACH ROW WHEN (NEW.answer_status = 'pending' AND OLD.answer_status <> 'pending')
    EXECUTE FUNCTION tasklatch_wakeup('answer');
