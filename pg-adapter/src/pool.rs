//! Connection pools for the store and the ledger: every connection starts in tasklatch's schema
//! with its timeouts ([`SessionSettings`]), and is checked to have them before its first use
//! (`session_check.rs`: a pooler may drop the start-up options).

use crate::session::SessionSettings;
use crate::session_check::{verify_session, SessionMismatch};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, PgPool};
use std::str::FromStr;
use std::time::Duration;

/// How long a caller waits for a pooled connection before the call fails as unavailable.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);
/// Characters of a connection error's own text kept as its cause.
const MAX_CAUSE: usize = 200;

/// Why a pool could not be opened: the server it was pointed at and the cause, e.g. `could not
/// connect to the database at 127.0.0.1:5432: Connection refused (os error 111)`. Never names
/// the password or the URL.
#[derive(Debug, thiserror::Error)]
#[error("could not connect to the database at {server}: {cause}")]
pub struct ConnectError {
    /// `host:port` (`[address]:port` for an IPv6 address), or the Unix socket's path.
    pub server: String,
    /// What went wrong: the operating system's error (`Connection refused (os error 111)`), the
    /// server's refusal with its SQLSTATE, a TLS error, or that no connection came in time.
    pub cause: String,
}

/// A pool on `url` with at most `max` connections and the default session settings (schema
/// `tasklatch`, lock timeout 5 s, statement timeout 30 s).
pub async fn connect(url: &str, max: u32) -> Result<PgPool, sqlx::Error> {
    connect_named(url, max, "tasklatch").await
}

/// A pool on `url` with at most `max` connections and the default session settings, whose
/// backends show `application_name` (so an operator — or a test — can find them in
/// `pg_stat_activity`). A pool that cannot be opened is `sqlx::Error::Configuration` holding
/// the [`ConnectError`] ([`open_checked`]).
pub async fn connect_named(
    url: &str,
    max: u32,
    application_name: &str,
) -> Result<PgPool, sqlx::Error> {
    let opts = PgConnectOptions::from_str(url)?.application_name(application_name);
    let session = SessionSettings::default();
    open_checked(pool_options(max), session.apply(opts), &session)
        .await
        .map_err(|e| sqlx::Error::Configuration(Box::new(e)))
}

/// A pool of at most `max` connections on `opts`, each started with `session` and checked to
/// have it. A refused connection is retried for 30 s; a failure names the server and the cause
/// ([`open_checked`]).
pub async fn connect_with(
    opts: PgConnectOptions,
    max: u32,
    session: &SessionSettings,
) -> Result<PgPool, ConnectError> {
    open_checked(pool_options(max), session.apply(opts), session).await
}

/// `pool` whose every new connection is checked to be in `session`'s schema with its timeouts
/// before its first use (`session_check.rs`); one that is not is closed, never handed out.
pub fn checked(pool: PgPoolOptions, session: &SessionSettings) -> PgPoolOptions {
    let session = session.clone();
    pool.after_connect(move |conn, _| {
        let session = session.clone();
        Box::pin(async move { verify_session(conn, &session).await })
    })
}

/// [`open`] with every connection [`checked`] against `session` (`opts` must carry it, e.g.
/// `session.apply(…)`, or the role or database must set it). A connection whose session is not
/// `session` makes the open fail, after the pool's acquire timeout, with the
/// [`SessionMismatch`]'s text as the cause: the setting, what it is, where that came from, and
/// what to do.
pub async fn open_checked(
    pool: PgPoolOptions,
    opts: PgConnectOptions,
    session: &SessionSettings,
) -> Result<PgPool, ConnectError> {
    let wait = pool.get_acquire_timeout();
    let cause = match checked(pool, session).connect_with(opts.clone()).await {
        Ok(pool) => return Ok(pool),
        Err(sqlx::Error::PoolTimedOut) => probe(&opts, wait, Some(session)).await,
        Err(e) => cause_of(&e),
    };
    Err(ConnectError {
        server: server_of(&opts),
        cause,
    })
}

/// At most `max` connections; a caller waits at most [`ACQUIRE_TIMEOUT`] for one.
fn pool_options(max: u32) -> PgPoolOptions {
    PgPoolOptions::new()
        .max_connections(max)
        .acquire_timeout(ACQUIRE_TIMEOUT)
}

/// Opens `pool` on `opts`, connecting as the pool's options say (a refused connection is
/// retried until their acquire timeout, so a server that is starting up is waited for).
///
/// A failure names the server and its cause. sqlx reports a connection that never came within
/// the acquire timeout only as a pool timeout, so then one more, direct attempt (bounded by the
/// same timeout) is made and its error is the cause: `Connection refused (os error 111)`, say.
pub async fn open(pool: PgPoolOptions, opts: PgConnectOptions) -> Result<PgPool, ConnectError> {
    let wait = pool.get_acquire_timeout();
    let cause = match pool.connect_with(opts.clone()).await {
        Ok(pool) => return Ok(pool),
        Err(sqlx::Error::PoolTimedOut) => probe(&opts, wait, None).await,
        Err(e) => cause_of(&e),
    };
    Err(ConnectError {
        server: server_of(&opts),
        cause,
    })
}

/// The cause a direct connection attempt on `opts` meets within `wait`, its session checked
/// against `session` when given.
async fn probe(
    opts: &PgConnectOptions,
    wait: Duration,
    session: Option<&SessionSettings>,
) -> String {
    let attempt = async {
        let mut conn = opts.connect().await?;
        let checked = match session {
            Some(s) => verify_session(&mut conn, s).await,
            None => Ok(()),
        };
        let _ = conn.close().await;
        checked
    };
    match tokio::time::timeout(wait, attempt).await {
        Ok(Err(e)) => cause_of(&e),
        Ok(Ok(())) => format!(
            "no connection within {} ms (a later attempt succeeded)",
            wait.as_millis()
        ),
        Err(_) => format!("no answer within {} ms", wait.as_millis()),
    }
}

/// A connection error's own text: the operating system's error, the server's message with its
/// SQLSTATE, or sqlx's text. Never the URL (none of them quotes it); not yet bounded.
pub(crate) fn error_text(e: &sqlx::Error) -> String {
    match e {
        sqlx::Error::Io(io) => io.to_string(),
        sqlx::Error::Database(db) => format!(
            "{} (SQLSTATE {})",
            db.message(),
            db.code().unwrap_or_default()
        ),
        other => other.to_string(),
    }
}

/// A connection error's cause: the operating system's error, the server's message with its
/// SQLSTATE (a refusal at connect, e.g. a failed authentication, which never quotes the
/// password), or sqlx's own text, at most [`MAX_CAUSE`] characters — except a
/// [`SessionMismatch`], given whole (its remedy is the point), and a pooler's refusal of the
/// start-up options, followed by what to do. None of them quotes the URL.
fn cause_of(e: &sqlx::Error) -> String {
    if let sqlx::Error::Configuration(inner) = e {
        if let Some(mismatch) = inner.downcast_ref::<SessionMismatch>() {
            return mismatch.to_string();
        }
    }
    let text = error_text(e);
    let mut cause: String = text.chars().take(MAX_CAUSE).collect();
    if text.contains("unsupported startup parameter: options") {
        cause.push_str(OPTIONS_REFUSED);
    }
    cause
}

/// Added to PgBouncer's refusal of the `options` start-up parameter (1.18 cannot carry it).
const OPTIONS_REFUSED: &str = " — a pooler (PgBouncer) that cannot carry start-up options: \
     list options in its ignore_startup_parameters and give the role or the database the schema \
     and the timeouts (ALTER ROLE <role> SET search_path = <schema>, statement_timeout, \
     lock_timeout; each pooled connection is checked to have them)";

/// Where `opts` point: `host:port` (`[address]:port` for an IPv6 address), or the path of the
/// Unix socket (`<directory>/.s.PGSQL.<port>`, as libpq names it).
fn server_of(opts: &PgConnectOptions) -> String {
    let (host, port) = (opts.get_host(), opts.get_port());
    match opts.get_socket() {
        Some(dir) => format!("{}/.s.PGSQL.{port}", dir.display()),
        None if host.starts_with('/') => format!("{host}/.s.PGSQL.{port}"),
        None if host.contains(':') && !host.starts_with('[') => format!("[{host}]:{port}"),
        None => format!("{host}:{port}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(url: &str) -> PgConnectOptions {
        PgConnectOptions::from_str(url).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_server_is_named_by_address_and_port_or_socket() {
        let named = |url| server_of(&options(url));
        assert_eq!(
            named("postgres://u:pw@db.example:6432/app"),
            "db.example:6432"
        );
        assert_eq!(named("postgres://u:pw@[::1]/app"), "[::1]:5432");
        assert_eq!(
            named("postgres://u@localhost/app?host=/var/run/postgresql"),
            "/var/run/postgresql/.s.PGSQL.5432"
        );
    }

    /// A port nothing listens on: the pool times out, the direct attempt names the refusal;
    /// the password and the URL are not in the message.
    #[tokio::test]
    async fn a_refused_connection_is_named_with_the_server_and_the_cause() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap_or_else(|e| panic!("{e}"))
            .port();
        let opts = options(&format!("postgres://u:PLANTED-PW@127.0.0.1:{port}/db"));
        let pool = PgPoolOptions::new().acquire_timeout(Duration::from_millis(300));
        let e = open(pool, opts)
            .await
            .err()
            .unwrap_or_else(|| panic!("connected"));
        let text = e.to_string();
        let at = format!("could not connect to the database at 127.0.0.1:{port}: ");
        assert!(text.starts_with(&at) && text.contains("refused"), "{text}");
        assert!(
            !text.contains("PLANTED") && !text.contains("postgres://"),
            "{text}"
        );
    }
}
