//! Finding the primary among a host list, and refusing connections to anything else.
//!
//! A server takes writes when it is not in recovery (a standby is) and its sessions are not
//! read-only (`transaction_read_only`: `default_transaction_read_only`, a read-only role, or a
//! managed service's read-only switch) — `sql/admin/primary_check.sql`. [`find_primary`] asks
//! each host in order, each within a short timeout, and returns the first that takes writes, or
//! [`NoPrimary`] naming what every host answered. [`checked_primary`] makes a pool check each new
//! connection for its session (`session_check.rs`) and for writes: a connection to a standby or
//! a read-only server is refused as [`ReadOnlyServer`], so the pool never hands one out.

use crate::hosts::{list_text, Host};
use crate::session::SessionSettings;
use crate::session_check::verify_session;
use crate::sql;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, PgConnection, Row};
use std::fmt;
use std::time::Duration;

/// How long a probe of one host may take (connect and ask), by default.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// What a server answered [`role_of`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Role {
    /// It takes writes.
    Primary,
    /// A standby (`pg_is_in_recovery()`).
    Standby,
    /// Not in recovery, but its sessions are read-only (`transaction_read_only = on`).
    ReadOnly,
}

/// A connection refused because its server does not take writes.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("the server is {} and takes no writes: not the primary (a pool that follows the primary refuses its connections)", role_text(*.0))]
pub struct ReadOnlyServer(pub Role);

/// No host of the list takes writes: what each one answered.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("no primary among {}: {}", list_text(.hosts), .findings.join("; "))]
pub struct NoPrimary {
    /// The hosts asked.
    pub hosts: Vec<Host>,
    /// `host:port: what it answered`, one per host.
    pub findings: Vec<String>,
}

fn role_text(role: Role) -> &'static str {
    match role {
        Role::Primary => "the primary",
        Role::Standby => "a standby (in recovery)",
        Role::ReadOnly => "read-only (transaction_read_only = on)",
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(role_text(*self))
    }
}

/// What `conn`'s server is (one round trip, simple query protocol).
pub async fn role_of(conn: &mut PgConnection) -> Result<Role, sqlx::Error> {
    let row = sqlx::raw_sql(sql::PRIMARY_CHECK).fetch_one(conn).await?;
    let in_recovery: bool = row.try_get("in_recovery")?;
    let read_only: String = row.try_get("transaction_read_only")?;
    Ok(match (in_recovery, read_only.as_str()) {
        (true, _) => Role::Standby,
        (false, "on") => Role::ReadOnly,
        (false, _) => Role::Primary,
    })
}

/// Refuses `conn` unless its server takes writes: `sqlx::Error::Configuration` holding a
/// [`ReadOnlyServer`].
pub async fn refuse_read_only(conn: &mut PgConnection) -> Result<(), sqlx::Error> {
    match role_of(conn).await? {
        Role::Primary => Ok(()),
        role => Err(sqlx::Error::Configuration(Box::new(ReadOnlyServer(role)))),
    }
}

/// `pool` whose every new connection is checked for `session` and refused unless its server
/// takes writes; `on_refused` runs when one is refused as read-only (a failover under way).
pub fn checked_primary(
    pool: PgPoolOptions,
    session: &SessionSettings,
    on_refused: impl Fn() + Send + Sync + 'static,
) -> PgPoolOptions {
    let session = session.clone();
    let on_refused = std::sync::Arc::new(on_refused);
    pool.after_connect(move |conn, _| {
        let (session, on_refused) = (session.clone(), on_refused.clone());
        Box::pin(async move {
            verify_session(conn, &session).await?;
            let writable = refuse_read_only(conn).await;
            if writable.is_err() {
                on_refused();
            }
            writable
        })
    })
}

/// What one host is, asked within `timeout` on a connection of its own (closed after).
pub async fn probe(opts: &PgConnectOptions, timeout: Duration) -> Result<Role, String> {
    let ask = async {
        let mut conn = opts.connect().await?;
        let role = role_of(&mut conn).await;
        let _ = conn.close().await;
        role
    };
    match tokio::time::timeout(timeout, ask).await {
        Ok(Ok(role)) => Ok(role),
        Ok(Err(e)) => Err(short(&e)),
        Err(_) => Err(format!("no answer within {} ms", timeout.as_millis())),
    }
}

/// The first host of `hosts` (in order) that takes writes, `base` pointed at it; each asked
/// within `timeout`.
pub async fn find_primary(
    base: &PgConnectOptions,
    hosts: &[Host],
    timeout: Duration,
) -> Result<Host, NoPrimary> {
    let mut findings = Vec::with_capacity(hosts.len());
    for host in hosts {
        match probe(&host.apply(base), timeout).await {
            Ok(Role::Primary) => return Ok(host.clone()),
            Ok(role) => findings.push(format!("{host}: {role}")),
            Err(cause) => findings.push(format!("{host}: {cause}")),
        }
    }
    Err(NoPrimary {
        hosts: hosts.to_vec(),
        findings,
    })
}

/// A connection error in a few words, never quoting the URL.
fn short(e: &sqlx::Error) -> String {
    crate::pool::error_text(e).chars().take(200).collect()
}
