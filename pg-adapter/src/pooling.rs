//! The start-up probe for a transaction pooler in front of the pool (issue 27 item 5).
//!
//! sqlx runs every statement with arguments over the extended protocol in two exchanges: `Parse`
//! (named `sqlx_s_N` for the cached statements every `sqlx::query` makes by default, unnamed for
//! `.persistent(false)`) with `Describe` and a `Sync`, then — once the first `ReadyForQuery`
//! came back — `Bind`, `Execute` and a second `Sync`. A transaction pooler (PgBouncer
//! `pool_mode = transaction`) may hand the client another server connection after each
//! `ReadyForQuery` outside a transaction, so the `Bind` can reach a backend that has no such
//! statement, or another client's statement of the same name. PgBouncer 1.18 does not track
//! prepared statements at all; 1.21+ with `max_prepared_statements` tracks the named ones only.
//! And turning sqlx's statement cache off does not help: a persistent query still prepares a
//! named statement (it is then never closed). So the worker does not run behind one: it refuses.
//!
//! The probe ([`check_session_pooling`]) reads which backend answers (`sql/admin/backend_pid.sql`,
//! simple query protocol) on one client connection `a`, then on a second one `b` while `a` is
//! idle, then on `a` again. Without a pooler, or behind a session pooler, `a` keeps its backend
//! and `b` has another. Behind a transaction pooler `a` released its backend after its first
//! statement: PgBouncer hands the most recently released server out first
//! (`server_round_robin = 0`, its default), so `b` gets `a`'s backend, or, when it got another,
//! `a` then gets that one. Either is refused. (With `server_round_robin = 1` the probe can miss
//! a transaction pooler; the statements' own errors would then show it.)

use crate::sql;
use sqlx::{ConnectOptions, Connection, PgConnection, PgPool, Row};
use std::fmt;

/// What the probe found: the backends `a`, `b` and `a` again were answered by.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct TransactionPooling {
    /// The backend of the first client connection's first statement.
    pub first: i32,
    /// The backend of the second client connection, while the first was idle.
    pub other: i32,
    /// The backend of the first client connection's second statement.
    pub again: i32,
}

impl std::error::Error for TransactionPooling {}

impl fmt::Display for TransactionPooling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let seen = if self.other == self.first {
            format!(
                "two client connections were answered by one server backend (pid {})",
                self.first
            )
        } else {
            format!(
                "one client connection was answered by backend {} and then by backend {}",
                self.first, self.again
            )
        };
        write!(
            f,
            "a transaction pooler is in front of the database (PgBouncer pool_mode = \
             transaction, or statement): {seen}. The worker's statements (sqlx's prepared \
             statements, named sqlx_s_N, and the unnamed ones, each parsed and bound in two \
             exchanges) need one server backend per client connection: PgBouncer before 1.21 \
             tracks no prepared statements, and 1.21+ with max_prepared_statements tracks only \
             named ones. Use pool_mode = session for the worker's database (or a direct \
             connection); a transaction pooler is not supported"
        )
    }
}

/// Why [`check_session_pooling`] refused.
#[derive(Debug, thiserror::Error)]
pub enum PoolingError {
    /// A transaction pooler was seen.
    #[error("{0}")]
    Transaction(TransactionPooling),
    /// The probe could not run.
    #[error("the pooling probe failed: {0}")]
    Probe(#[from] sqlx::Error),
}

/// Refuses a transaction pooler in front of `pool` (the module's probe): `Ok` without a pooler
/// or behind a session pooler. Holds one pooled connection and opens one more connection on the
/// pool's current connect options for the probe's duration (three simple-query round trips).
pub async fn check_session_pooling(pool: &PgPool) -> Result<(), PoolingError> {
    let mut a = pool.acquire().await?;
    let mut b = pool.connect_options().connect().await?;
    let found = async {
        let first = backend(&mut a).await?;
        let other = backend(&mut b).await?;
        let again = backend(&mut a).await?;
        Ok::<_, sqlx::Error>(TransactionPooling {
            first,
            other,
            again,
        })
    }
    .await;
    let _ = b.close().await;
    let found = found?;
    if found.other != found.first && found.again == found.first {
        Ok(())
    } else {
        Err(PoolingError::Transaction(found))
    }
}

/// The pid of the backend that answers `conn`'s next statement.
async fn backend(conn: &mut PgConnection) -> Result<i32, sqlx::Error> {
    sqlx::raw_sql(sql::BACKEND_PID)
        .fetch_one(conn)
        .await?
        .try_get("pid")
}
