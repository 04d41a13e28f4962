-- What a new pooled connection really got (run once per connection, before its first use, by
-- the pool's after-connect check, `session_check.rs`): the search_path and the first existing
-- schema on it, and both timeouts in milliseconds — each with where it came from (`client`: the
-- start-up packet; `user`, `database`, `database user`: ALTER ROLE / ALTER DATABASE … SET;
-- `configuration file`, `default`). All text, read over the simple query protocol (no prepared
-- statement, so it also runs through a transaction pooler). No parameters.
SELECT
    current_setting('search_path') AS search_path,
    coalesce(current_schema(), '') AS current_schema,
    (SELECT source FROM pg_settings WHERE name = 'search_path') AS search_path_source,
    (SELECT setting FROM pg_settings WHERE name = 'statement_timeout') AS statement_timeout_ms,
    (SELECT source FROM pg_settings WHERE name = 'statement_timeout') AS statement_timeout_source,
    (SELECT setting FROM pg_settings WHERE name = 'lock_timeout') AS lock_timeout_ms,
    (SELECT source FROM pg_settings WHERE name = 'lock_timeout') AS lock_timeout_source
