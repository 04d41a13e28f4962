-- Starting a run in one round trip (the gateway's hot path), with the same contract and the
-- same race-safety as the step-by-step version in PgLedger:
--   1. a known key returns its run, whatever the thread's state now;
--   2. the thread row is locked FOR UPDATE (starters on one thread are serialised), then the
--      key is looked up again (each statement of a VOLATILE function takes a fresh snapshot
--      under READ COMMITTED, so a run committed by the previous lock holder is seen);
--   3. a missing, deleted or foreign thread is 'thread_gone' (404), nothing is created;
--   4. an active run on the thread is 'busy' (409);
--   5. else a new running run, `run-{n}` from run_seq; the unique key index settles any race.
CREATE FUNCTION tasklatch_start_run(
    p_key text, p_owner text, p_thread text, p_prompt text, p_now bigint,
    OUT outcome text, OUT started_run text)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    t_owner   text;
    t_deleted boolean;
BEGIN
    SELECT r.run_id INTO started_run FROM runs r WHERE r.key = p_key ORDER BY r.seq LIMIT 1;
    IF started_run IS NOT NULL THEN
        outcome := 'started';
        RETURN;
    END IF;
    SELECT t.owner, t.deleted INTO t_owner, t_deleted
        FROM threads t WHERE t.thread = p_thread FOR UPDATE;
    SELECT r.run_id INTO started_run FROM runs r WHERE r.key = p_key ORDER BY r.seq LIMIT 1;
    IF started_run IS NOT NULL THEN
        outcome := 'started';
        RETURN;
    END IF;
    IF t_owner IS NULL OR t_deleted OR t_owner <> p_owner THEN
        outcome := 'thread_gone';
        RETURN;
    END IF;
    PERFORM 1 FROM runs r WHERE r.thread = p_thread AND r.status IN ('pending', 'running');
    IF FOUND THEN
        outcome := 'busy';
        RETURN;
    END IF;
    INSERT INTO runs (seq, run_id, key, owner, thread, prompt, status, created_at)
        SELECT s.n, 'run-' || s.n, p_key, p_owner, p_thread, p_prompt, 'running', p_now
        FROM (SELECT nextval('run_seq') AS n) s
        ON CONFLICT (key) DO NOTHING
        RETURNING run_id INTO started_run;
    IF started_run IS NULL THEN
        SELECT r.run_id INTO started_run FROM runs r WHERE r.key = p_key ORDER BY r.seq LIMIT 1;
    END IF;
    outcome := 'started';
END
$$;
