-- How this connection's commits are replicated (the worker's start-up check, `replication.rs`):
-- its own synchronous_commit (a role or database setting may change it), the primary's
-- synchronous_standby_names, and one row per attached physical standby with its sync state
-- (`sync`, `quorum`, `potential`, `async`; NULL when this role may not see it — pg_monitor /
-- pg_read_all_stats may), or a single row with a NULL pid when none is attached. A base backup
-- in progress (state `backup`) and logical replication (a walsender holding a logical slot) are
-- no failover target and are left out. No parameters.
SELECT
    current_setting('synchronous_commit') AS synchronous_commit,
    current_setting('synchronous_standby_names') AS synchronous_standby_names,
    r.pid,
    r.application_name,
    r.state,
    r.sync_state
FROM (SELECT 1) AS one
LEFT JOIN pg_stat_replication AS r
    ON r.state IS DISTINCT FROM 'backup'
    AND NOT EXISTS (
        SELECT 1 FROM pg_replication_slots AS s
        WHERE s.active_pid = r.pid AND s.slot_type = 'logical'
    )
ORDER BY r.application_name
