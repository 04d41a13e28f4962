-- no-transaction
-- The poll claim's partial index, with the predicate of the claim after issue 11 item 1: polling
-- stands still only while cancel work is in progress (cancel_status = 'requested'); a task whose
-- cancel was acknowledged or dead-lettered is polled again until it is terminal. Built
-- CONCURRENTLY (outside a transaction: no lock that blocks writes to tasks while it builds);
-- 0013 then drops the old index. IF NOT EXISTS: a build interrupted midway leaves an invalid
-- index of this name, which an operator drops before re-running.
CREATE INDEX CONCURRENTLY IF NOT EXISTS tasks_poll_due_v2 ON tasks (poll_next_at, id)
    WHERE remote_status IN ('submitted', 'working', 'input_required')
      AND cancel_status <> 'requested';
