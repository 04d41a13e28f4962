//! Connection pools for the store and the ledger: every connection starts in tasklatch's schema
//! with its timeouts ([`SessionSettings`]).

use crate::session::SessionSettings;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;
use std::str::FromStr;
use std::time::Duration;

/// How long a caller waits for a pooled connection before the call fails as unavailable.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);

/// A pool on `url` with at most `max` connections and the default session settings (schema
/// `tasklatch`, lock timeout 5 s, statement timeout 30 s).
pub async fn connect(url: &str, max: u32) -> Result<PgPool, sqlx::Error> {
    connect_named(url, max, "tasklatch").await
}

/// A pool on `url` with at most `max` connections and the default session settings, whose
/// backends show `application_name` (so an operator — or a test — can find them in
/// `pg_stat_activity`).
pub async fn connect_named(
    url: &str,
    max: u32,
    application_name: &str,
) -> Result<PgPool, sqlx::Error> {
    let opts = PgConnectOptions::from_str(url)?.application_name(application_name);
    connect_with(opts, max, &SessionSettings::default()).await
}

/// A pool of at most `max` connections on `opts`, each started with `session`.
pub async fn connect_with(
    opts: PgConnectOptions,
    max: u32,
    session: &SessionSettings,
) -> Result<PgPool, sqlx::Error> {
    PgPoolOptions::new()
        .max_connections(max)
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .connect_with(session.apply(opts))
        .await
}
