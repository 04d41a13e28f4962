-- The run ledger: the launcher's own source of truth (DOMAIN §3 "Delivery"), the Postgres twin of
-- tasklatch_core::ledger::MemLedger.
--
-- A run is keyed by its idempotency key, which is UNIQUE: the same key always yields the same run,
-- across processes. Threads are locked FOR UPDATE while a run is started on them, so "one active
-- run per thread" holds under concurrency. Deletion of a thread is final.

CREATE TABLE threads (
    thread     text COLLATE "C" PRIMARY KEY,
    owner      text COLLATE "C" NOT NULL,
    deleted    boolean NOT NULL DEFAULT false,
    created_at bigint NOT NULL,
    deleted_at bigint,
    CONSTRAINT threads_thread_len CHECK (char_length(thread) BETWEEN 1 AND 200),
    CONSTRAINT threads_owner_len CHECK (char_length(owner) BETWEEN 1 AND 200)
);

-- Run ids are `run-{n}` with n from this sequence.
CREATE SEQUENCE run_seq;

CREATE TABLE runs (
    seq         bigint PRIMARY KEY,
    run_id      text COLLATE "C" NOT NULL UNIQUE,
    key         text COLLATE "C" NOT NULL,
    owner       text COLLATE "C" NOT NULL,
    thread      text COLLATE "C" NOT NULL,
    prompt      text NOT NULL,
    status      text NOT NULL,
    created_at  bigint NOT NULL,
    finished_at bigint,
    CONSTRAINT runs_status CHECK (status IN
        ('pending', 'running', 'success', 'error', 'timeout', 'interrupted')),
    CONSTRAINT runs_key_len CHECK (char_length(key) BETWEEN 1 AND 1000)
);

-- The same key, the same run: this index decides, across processes.
CREATE UNIQUE INDEX runs_key_unique ON runs (key);

-- "Is a run active on this thread?" (409 busy).
CREATE INDEX runs_active_on_thread ON runs (thread) WHERE status IN ('pending', 'running');
