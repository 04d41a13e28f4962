-- no-transaction
-- The backlog gauges (sql/store/backlog.sql) count the dead letters now standing, on every
-- worker's refresh: this partial index holds only rows with a notification or a cancel dead
-- letter, so the count reads those rows instead of scanning the table.
--
-- Built CONCURRENTLY, outside a transaction (the first line tells sqlx), as 0009: writes to
-- `tasks` go on during the build. If the build fails midway it leaves an INVALID index and
-- sqlx records nothing: drop it (DROP INDEX CONCURRENTLY tasks_dead_letters) and run
-- `tasklatch migrate` again.
CREATE INDEX CONCURRENTLY tasks_dead_letters ON tasks (id)
    WHERE notify_status = 'dead_letter' OR cancel_status = 'dead_letter';
