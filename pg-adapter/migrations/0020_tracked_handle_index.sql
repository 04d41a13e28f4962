-- no-transaction
-- A remote handle is tracked once per owner and server — but a submit's intent (DOMAIN §7) is
-- stored before the remote call, with an empty remote_task_id, and several owners' submits may
-- wait at once: the uniqueness holds for recorded handles only. Built CONCURRENTLY (outside a
-- transaction: writes to tasks go on while it builds); 0021 then drops the old index. IF NOT
-- EXISTS: a build interrupted midway leaves an INVALID index of this name, which an operator
-- drops (DROP INDEX CONCURRENTLY tasks_tracked_handle_unique) before running migrate again.
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS tasks_tracked_handle_unique
    ON tasks (owner, server, remote_task_id)
    WHERE remote_task_id <> '';
