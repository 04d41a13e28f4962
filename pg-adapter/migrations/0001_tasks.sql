-- The task table: one row per task, the notification outbox on the row (DESIGN "pg-adapter").
--
-- Columns mirror tasklatch_core::task::TaskRow field by field, grouped by concern with a prefix:
-- identity (no prefix), remote_* (last applied remote state), poll_* (schedule and poll lease),
-- the outbox (event_version / notified_version, fingerprint, event, notify_*, dispatch_*), and
-- cancel_* (cancel work with its own lease). Timestamps are bigint microseconds since the Unix
-- epoch (core's Timestamp); events are canonical JSON text (Event::canonical_json). Ids use
-- COLLATE "C" so ORDER BY id is byte order, as in the in-memory model.
--
-- Limits are those of core/src/policy.rs, enforced here a second time: MAX_ID = 200,
-- MAX_NAME = 200, MAX_DRIVER_DATA = 4000, MAX_RESULT_PREVIEW = 8000, MAX_ARTIFACT = 4000,
-- MAX_INPUT_REQUEST = 4000, MAX_STORED_ERROR = 4000. u32 counters are bounded to 4294967295.

CREATE TABLE tasks (
    -- identity
    id                      text COLLATE "C" PRIMARY KEY,
    owner                   text COLLATE "C" NOT NULL,
    thread                  text COLLATE "C" NOT NULL,
    server                  text COLLATE "C" NOT NULL,
    name                    text NOT NULL,
    remote_task_id          text COLLATE "C" NOT NULL,
    driver_data             text NOT NULL,
    created_at              bigint NOT NULL,

    -- remote state
    remote_status           text NOT NULL,
    remote_result           text,
    remote_result_truncated boolean NOT NULL,
    remote_artifact         text,
    remote_error            text,
    remote_input_request    text,
    remote_updated_at       bigint NOT NULL,
    remote_observed_at      bigint,

    -- poll schedule and lease
    poll_next_at            bigint,
    poll_consecutive_errors bigint NOT NULL,
    poll_error_class        text,
    poll_error_message      text,
    poll_lease_owner        text COLLATE "C",
    poll_lease_token        bigint,
    poll_lease_expires_at   bigint,
    poll_claims             bigint NOT NULL,

    -- notification outbox
    event_version           bigint NOT NULL,
    notified_version        bigint NOT NULL,
    fingerprint             text COLLATE "C",
    event                   text,
    notify_status           text NOT NULL,
    notify_due_at           bigint NOT NULL,
    notify_lease_owner      text COLLATE "C",
    notify_lease_token      bigint,
    notify_lease_expires_at bigint,
    notify_claims           bigint NOT NULL,
    dispatch_version        bigint NOT NULL,
    dispatch_event          text,
    dispatch_attempt        bigint NOT NULL,
    run_id                  text COLLATE "C",
    notify_failures         bigint NOT NULL,
    busy_count              bigint NOT NULL,
    notify_last_error       text,
    dead_letter_version     bigint,
    dead_letter_reason      text,

    -- cancel work
    cancel_requested_at     bigint,
    cancel_status           text NOT NULL,
    cancel_due_at           bigint,
    cancel_lease_owner      text COLLATE "C",
    cancel_lease_token      bigint,
    cancel_lease_expires_at bigint,
    cancel_claims           bigint NOT NULL,
    cancel_failures         bigint NOT NULL,
    cancel_last_error       text,

    -- length limits (characters, as core counts them)
    CONSTRAINT tasks_id_len CHECK (char_length(id) BETWEEN 1 AND 200),
    CONSTRAINT tasks_owner_len CHECK (char_length(owner) BETWEEN 1 AND 200),
    CONSTRAINT tasks_thread_len CHECK (char_length(thread) BETWEEN 1 AND 200),
    CONSTRAINT tasks_server_len CHECK (char_length(server) BETWEEN 1 AND 200),
    CONSTRAINT tasks_name_len CHECK (char_length(name) <= 200),
    CONSTRAINT tasks_remote_task_id_len CHECK (char_length(remote_task_id) <= 200),
    CONSTRAINT tasks_driver_data_len CHECK (char_length(driver_data) <= 4000),
    CONSTRAINT tasks_result_len CHECK (char_length(remote_result) <= 8000),
    CONSTRAINT tasks_artifact_len CHECK (char_length(remote_artifact) <= 4000),
    CONSTRAINT tasks_remote_error_len CHECK (char_length(remote_error) <= 4000),
    CONSTRAINT tasks_input_request_len CHECK (char_length(remote_input_request) <= 4000),
    CONSTRAINT tasks_poll_error_len CHECK (char_length(poll_error_message) <= 4000),
    CONSTRAINT tasks_notify_error_len CHECK (char_length(notify_last_error) <= 4000),
    CONSTRAINT tasks_cancel_error_len CHECK (char_length(cancel_last_error) <= 4000),

    -- enum spellings (tasklatch_core::status, task::ErrorClass)
    CONSTRAINT tasks_remote_status CHECK (remote_status IN
        ('submitted', 'working', 'input_required', 'completed', 'failed', 'cancelled')),
    CONSTRAINT tasks_notify_status CHECK (notify_status IN
        ('none', 'pending', 'claimed', 'dispatched', 'retry', 'delivered', 'dead_letter')),
    CONSTRAINT tasks_cancel_status CHECK (cancel_status IN
        ('none', 'requested', 'done', 'dead_letter')),
    CONSTRAINT tasks_dead_letter_reason CHECK (dead_letter_reason IN ('thread_gone', 'budget')),
    CONSTRAINT tasks_poll_error_class CHECK (poll_error_class IN
        ('timeout', 'connection', 'server', 'rate_limited')),

    -- structure: optional groups are all present or all absent
    CONSTRAINT tasks_poll_error_pair CHECK ((poll_error_class IS NULL) = (poll_error_message IS NULL)),
    CONSTRAINT tasks_dead_letter_pair CHECK ((dead_letter_version IS NULL) = (dead_letter_reason IS NULL)),
    CONSTRAINT tasks_poll_lease CHECK (
        (poll_lease_owner IS NULL) = (poll_lease_token IS NULL)
        AND (poll_lease_owner IS NULL) = (poll_lease_expires_at IS NULL)),
    CONSTRAINT tasks_notify_lease CHECK (
        (notify_lease_owner IS NULL) = (notify_lease_token IS NULL)
        AND (notify_lease_owner IS NULL) = (notify_lease_expires_at IS NULL)),
    CONSTRAINT tasks_cancel_lease CHECK (
        (cancel_lease_owner IS NULL) = (cancel_lease_token IS NULL)
        AND (cancel_lease_owner IS NULL) = (cancel_lease_expires_at IS NULL)),

    -- counters: u64 ones are non-negative, u32 ones fit in 32 bits
    CONSTRAINT tasks_u64_counters CHECK (
        poll_claims >= 0 AND notify_claims >= 0 AND cancel_claims >= 0
        AND event_version >= 0 AND notified_version >= 0 AND dispatch_version >= 0
        AND poll_lease_token >= 0 AND notify_lease_token >= 0 AND cancel_lease_token >= 0
        AND dead_letter_version >= 0),
    CONSTRAINT tasks_u32_counters CHECK (
        poll_consecutive_errors BETWEEN 0 AND 4294967295
        AND dispatch_attempt BETWEEN 0 AND 4294967295
        AND notify_failures BETWEEN 0 AND 4294967295
        AND busy_count BETWEEN 0 AND 4294967295
        AND cancel_failures BETWEEN 0 AND 4294967295)
) WITH (fillfactor = 80);

-- A remote handle is tracked once per (owner, server).
CREATE UNIQUE INDEX tasks_handle_unique ON tasks (owner, server, remote_task_id);

-- Scoped user calls: list (newest first), detail, cancel by id or name.
CREATE INDEX tasks_scope ON tasks (owner, thread, created_at DESC, id);

-- One partial index per claim, ordered as the claim orders: (due, id). Each predicate is the
-- static part of the claim's WHERE clause, so only candidate rows are in the index.
CREATE INDEX tasks_poll_due ON tasks (poll_next_at, id)
    WHERE remote_status IN ('submitted', 'working', 'input_required')
      AND cancel_requested_at IS NULL;

CREATE INDEX tasks_notify_due ON tasks (notify_due_at, id)
    WHERE notify_status IN ('pending', 'claimed', 'retry', 'dispatched')
      AND event_version > notified_version;

CREATE INDEX tasks_cancel_due ON tasks (cancel_due_at, id)
    WHERE cancel_status = 'requested';
