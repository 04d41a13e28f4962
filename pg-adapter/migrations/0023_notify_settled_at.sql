-- When a task's notification last settled (core task::Outbox::settled_at: a dispatch ended
-- delivered or dead-lettered without reopening the channel), in microseconds. Retention
-- (prune_finished.sql) ages a row from the later of this and its last remote change, and keeps
-- a dead letter until it is requeued or has aged by its own, longer limit from this moment
-- (DOMAIN §10). Existing dead letters never recorded the moment: they count from this
-- migration, so none is deleted before the operator had the full dead-letter age to see it.
ALTER TABLE tasks ADD COLUMN notify_settled_at bigint;
UPDATE tasks
SET notify_settled_at = (extract(epoch FROM clock_timestamp()) * 1000000)::bigint
WHERE notify_status = 'dead_letter';
