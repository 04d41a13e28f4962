-- Starting many runs in one transaction (the coalescing ledger, pg-adapter/src/coalesce.rs):
-- request i of the arrays gets exactly the answer tasklatch_start_run (0003) would give it if
-- the requests were made one after another, in array order, with nothing else in between.
--
--   1. Every thread named in the batch is locked FOR UPDATE first, in byte order of its name
--      (the column is COLLATE "C"): concurrent batches take their locks in one global order and
--      cannot deadlock on threads. Their rows, as locked, are kept: the lock pins them (deletion
--      is an UPDATE and waits), and a thread created after the lock is treated as missing, as
--      the single function would have seen it at its own lock.
--   2. Then, per request in order (each statement takes a fresh snapshot and sees the batch's
--      own earlier inserts): a known key returns its run; else a missing, deleted or foreign
--      thread is 'thread_gone'; else an active run on the thread is 'busy'; else a new running
--      run `run-{n}` from run_seq, the unique key index settling any race with other sessions.
--      So within a batch the same key twice answers the same run, and a second key on a thread
--      that just got its run answers 'busy'.
--
-- A batch can still wait on another session's uncommitted insert of the same key (the unique
-- index decides). A key belongs to one task and so to one thread, whose lock already orders
-- the two; should the same key come on different threads, Postgres's deadlock detector fails
-- one of the transactions, which its callers see as an error ("maybe launched") and retry.
--
-- One row per request, `ord` = its 1-based position. Arrays of different lengths are refused.
CREATE FUNCTION tasklatch_start_runs(
    p_keys text[], p_owners text[], p_threads text[], p_prompts text[], p_nows bigint[])
RETURNS TABLE (ord integer, outcome text, started_run text)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    total     integer := coalesce(array_length(p_keys, 1), 0);
    l_threads text[];
    l_owners  text[];
    l_deleted boolean[];
    pos       integer;
BEGIN
    IF coalesce(array_length(p_owners, 1), 0) <> total
        OR coalesce(array_length(p_threads, 1), 0) <> total
        OR coalesce(array_length(p_prompts, 1), 0) <> total
        OR coalesce(array_length(p_nows, 1), 0) <> total THEN
        RAISE EXCEPTION 'tasklatch_start_runs: arrays of different lengths';
    END IF;
    WITH locked AS (
        SELECT t.thread, t.owner, t.deleted FROM threads t
        WHERE t.thread = ANY (p_threads)
        ORDER BY t.thread
        FOR UPDATE
    )
    SELECT array_agg(l.thread), array_agg(l.owner), array_agg(l.deleted)
        INTO l_threads, l_owners, l_deleted
        FROM locked l;
    FOR i IN 1 .. total LOOP
        ord := i;
        started_run := NULL;
        SELECT r.run_id INTO started_run FROM runs r WHERE r.key = p_keys[i] ORDER BY r.seq LIMIT 1;
        IF started_run IS NOT NULL THEN
            outcome := 'started';
            RETURN NEXT;
            CONTINUE;
        END IF;
        pos := array_position(l_threads, p_threads[i]);
        IF pos IS NULL OR l_deleted[pos] OR l_owners[pos] <> p_owners[i] THEN
            outcome := 'thread_gone';
            RETURN NEXT;
            CONTINUE;
        END IF;
        PERFORM 1 FROM runs r WHERE r.thread = p_threads[i] AND r.status IN ('pending', 'running');
        IF FOUND THEN
            outcome := 'busy';
            RETURN NEXT;
            CONTINUE;
        END IF;
        INSERT INTO runs (seq, run_id, key, owner, thread, prompt, status, created_at)
            SELECT s.n, 'run-' || s.n, p_keys[i], p_owners[i], p_threads[i], p_prompts[i],
                   'running', p_nows[i]
            FROM (SELECT nextval('run_seq') AS n) s
            ON CONFLICT (key) DO NOTHING
            RETURNING run_id INTO started_run;
        IF started_run IS NULL THEN
            SELECT r.run_id INTO started_run FROM runs r WHERE r.key = p_keys[i] ORDER BY r.seq LIMIT 1;
        END IF;
        outcome := 'started';
        RETURN NEXT;
    END LOOP;
END
$$;
