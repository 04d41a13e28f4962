-- When a notification's latest run was launched (Outbox::launched_at), so a run that never
-- ends can be bounded by the engine's max_run_life. A nullable column without a default: a
-- catalog change only (a brief ACCESS EXCLUSIVE lock on tasks, no table rewrite). Rows already
-- dispatched get the migration's time, so their runs' life is counted from the upgrade.
ALTER TABLE tasks ADD COLUMN launched_at bigint;
UPDATE tasks
    SET launched_at = (extract(epoch FROM clock_timestamp()) * 1000000)::bigint
    WHERE notify_status = 'dispatched';
