-- Whether this server takes writes (run by the host-list probe, by the after-connect check of
-- a pool that follows the primary, and by its watcher, `primary.rs`): a standby is in recovery;
-- a primary may still refuse writes (default_transaction_read_only, or a read-only role), which
-- transaction_read_only shows (`on`/`off`). Read over the simple query protocol (no prepared
-- statement, so it also runs through a transaction pooler). No parameters.
SELECT
    pg_is_in_recovery() AS in_recovery,
    current_setting('transaction_read_only') AS transaction_read_only
