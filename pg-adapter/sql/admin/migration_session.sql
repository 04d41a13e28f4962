-- The session `tasklatch migrate` runs the migrations in (on a connection of its own, closed
-- afterwards): the unqualified names of the migrations mean the configured schema, and neither
-- timeout applies — an index build on a large table takes as long as it takes, and the
-- migrator waits for its advisory lock and for the locks each migration needs (README "Online
-- upgrades" says which).
-- $1 the schema (a checked SchemaName).
SELECT
    set_config('search_path', $1, false),
    set_config('statement_timeout', '0', false),
    set_config('lock_timeout', '0', false)
