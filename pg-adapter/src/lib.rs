//! tasklatch-pg: the production store over Postgres, its run ledger, and the proof that the SQL
//! matches the model (DESIGN "pg-adapter").
//!
//! - [`PgStore`]: every [`tasklatch_core::store::Store`] method as one transaction, normally one
//!   statement; claims with `FOR UPDATE SKIP LOCKED`, guarded writes with the lease guard in the
//!   `WHERE` clause, batched through `UNNEST`, `now` always a parameter.
//! - [`PgLedger`]: the run ledger (unique idempotency key, 409 busy thread, 404 gone thread),
//!   the reference gateway behind `tasklatch_core::ledger::LedgerLauncher`; per call, or
//!   [`PgLedger::coalescing`]: concurrent launches share one transaction (`coalesce`).
//! - [`migrate`]: the migrations, embedded from `migrations/`, applied into tasklatch's own
//!   schema ([`SchemaName`], default `tasklatch`) with their history kept there; [`connect`]: a
//!   pool whose connections start in that schema with statement and lock timeouts
//!   ([`SessionSettings`]), each checked to have them before its first use ([`checked`],
//!   [`open_checked`]: a pooler may drop start-up options, [`SessionMismatch`]); [`open`]: a
//!   pool whose failure to connect names the server and the cause ([`ConnectError`]).
//! - [`Host`] lists (module `hosts`), [`find_primary`] and the read-only refusal (module
//!   `primary`), and [`open_following`] (module `failover`): a pool on whichever host of a list
//!   takes writes, re-pointed by its [`PrimaryFollower`] after a failover.
//! - [`read_replication`] (module `replication`): how the database replicates this
//!   connection's commits, for the worker's start-up check ([`ReplicationMode`]).
//! - [`PgStore::backlog`] (module `backlog`): the work waiting for each loop and the current
//!   dead letters, for the worker's gauges — a Postgres-only read, not part of the core trait.
//! - `harness` (feature `testkit`): fresh test databases on a local, configured or throwaway
//!   server, for tests, the simulation and the load tools (`tasklatch-load`).
//!
//! Production code only: knows nothing of turmoil, load generation or test doubles.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod backlog;
mod coalesce;
mod error;
mod failover;
#[cfg(feature = "testkit")]
pub mod harness;
mod hosts;
mod ledger;
mod migrate;
#[cfg(feature = "mutations")]
mod planted;
mod pool;
mod pooling;
mod primary;
mod replication;
mod row;
mod session;
mod session_check;
mod sql;
mod store;
mod template;

pub use backlog::{
    Backlog, BacklogRequest, LoopBacklog, DEAD_LETTER_SERIES, DEFAULT_BACKLOG_CAP,
    DEFAULT_BACKLOG_TIMEOUT,
};
pub use error::{ledger_error, store_error};
pub use failover::{
    open_following, open_primary, PrimaryFollower, PrimaryStatus, CHECK_EVERY, FIRST_REPROBE,
    MAX_REPROBE, NO_PRIMARY_SOCKET,
};
pub use hosts::{list_text, tcp_base, Host, InvalidHost, DEFAULT_PORT};
pub use ledger::{Coalescing, PgLedger};
pub use migrate::{migrate, migrator, MigrationError, MIGRATOR};
pub use pool::{checked, connect, connect_named, connect_with, open, open_checked, ConnectError};
pub use pooling::{check_session_pooling, PoolingError, TransactionPooling};
pub use primary::{
    checked_primary, find_primary, probe, refuse_read_only, role_of, NoPrimary, ReadOnlyServer,
    Role, PROBE_TIMEOUT,
};
pub use replication::{read_replication, Replication, ReplicationMode, Risk, Standby};
pub use row::{decode_task, event_json, storable};
pub use session::{
    InvalidSchemaName, SchemaName, SessionSettings, DEFAULT_LOCK_TIMEOUT, DEFAULT_SCHEMA,
    DEFAULT_STATEMENT_TIMEOUT,
};
pub use session_check::{compare, read_session, verify_session, SessionFound, SessionMismatch};
pub use store::PgStore;

/// The `EXPLAIN`-able candidate queries of the three claims (`$1` now, `$2` limit), for tests
/// and the benchmark: each must be served by its partial index.
pub fn claim_candidate_queries() -> [(&'static str, &'static str); 3] {
    [
        ("poll", sql::POLL_CANDIDATES),
        ("notify", sql::NOTIFY_CANDIDATES),
        ("cancel", sql::CANCEL_CANDIDATES),
    ]
}

/// The `EXPLAIN`-able backlog statement (`$1` now, `$2` overdue before, `$3` cap), for tests: its
/// loop counts must be served by the claims' partial indexes.
pub fn backlog_query() -> &'static str {
    sql::BACKLOG
}
