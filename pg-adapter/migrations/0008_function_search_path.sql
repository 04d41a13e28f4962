-- The functions no longer depend on their caller's search_path (issue 11 item 9).
--
-- tasklatch lives in a schema of its own (default `tasklatch`; the migrations run with it as
-- their search_path, so current_schema() below is that schema). The functions of 0003, 0004
-- and 0007 name runs, threads and run_seq unqualified, which Postgres resolves at each call
-- through the *calling* session's search_path: a host application's session (search_path
-- `public`) firing the wake-up trigger or calling tasklatch_start_run would resolve them
-- elsewhere — or find the application's own `threads` table. Each function now carries its own
-- search_path: tasklatch's schema, then pg_temp last (so no temporary table can shadow a table
-- of the schema). pg_catalog is searched first implicitly.
--
-- Locks: ALTER FUNCTION takes a lock on the function's catalog row only; no table is locked.
DO $$
DECLARE
    path text := format('%I, pg_temp', current_schema());
BEGIN
    EXECUTE format(
        'ALTER FUNCTION %I.tasklatch_start_run(text, text, text, text, bigint) SET search_path = %s',
        current_schema(), path);
    EXECUTE format(
        'ALTER FUNCTION %I.tasklatch_start_runs(text[], text[], text[], text[], bigint[]) SET search_path = %s',
        current_schema(), path);
    EXECUTE format(
        'ALTER FUNCTION %I.tasklatch_wakeup() SET search_path = %s',
        current_schema(), path);
END
$$;
