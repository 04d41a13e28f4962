-- Live panels (the worker's `ui` module): every write that changes what the background-task
-- panel shows of a task sends `pg_notify('tasklatch_thread_changes', <thread key>)` inside the
-- writing transaction, so Postgres delivers it at commit and never for a rolled-back write. One
-- LISTEN in each worker fans the keys out to the browsers showing that thread; a lost
-- notification costs the panel one poll, never a wrong state (the panel reads the store).
--
-- The key is the lower-case hex SHA-256 of `<characters in owner>:<owner><thread>` (unambiguous,
-- always 64 bytes: far under NOTIFY's 8000-byte payload limit, and no owner or thread name is
-- sent on the channel). Notifications with the same payload in one transaction are sent once.
-- The WHEN clause keeps every write the panel does not show (lease claims, releases, schedules,
-- counted failures) free of notifications; a deleted task (retention) leaves the recent list.
CREATE FUNCTION tasklatch_thread_changed() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r record;
BEGIN
    IF TG_OP = 'DELETE' THEN
        r := OLD;
    ELSE
        r := NEW;
    END IF;
    PERFORM pg_notify('tasklatch_thread_changes', encode(sha256(convert_to(
        char_length(r.owner)::text || ':' || r.owner || r.thread, 'UTF8')), 'hex'));
    RETURN NULL;
END
$$;

CREATE TRIGGER tasks_thread_changed_insert_delete
    AFTER INSERT OR DELETE ON tasks
    FOR EACH ROW EXECUTE FUNCTION tasklatch_thread_changed();

CREATE TRIGGER tasks_thread_changed_update
    AFTER UPDATE ON tasks
    FOR EACH ROW WHEN ((OLD.name, OLD.remote_status, OLD.remote_updated_at, OLD.remote_error,
        OLD.remote_result, OLD.remote_input_request, OLD.notify_status, OLD.busy_count,
        OLD.notify_unavailable_since, OLD.cancel_requested_at, OLD.cancel_status,
        OLD.cancel_unavailable_since, OLD.answer_status, OLD.answer_request_id)
        IS DISTINCT FROM (NEW.name, NEW.remote_status, NEW.remote_updated_at, NEW.remote_error,
        NEW.remote_result, NEW.remote_input_request, NEW.notify_status, NEW.busy_count,
        NEW.notify_unavailable_since, NEW.cancel_requested_at, NEW.cancel_status,
        NEW.cancel_unavailable_since, NEW.answer_status, NEW.answer_request_id))
    EXECUTE FUNCTION tasklatch_thread_changed();
