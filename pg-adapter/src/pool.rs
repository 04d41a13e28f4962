//! Connection pools for the store and the ledger.

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;
use std::str::FromStr;
use std::time::Duration;

/// How long a caller waits for a pooled connection before the call fails as unavailable.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);

/// A pool on `url` with at most `max` connections.
pub async fn connect(url: &str, max: u32) -> Result<PgPool, sqlx::Error> {
    connect_named(url, max, "tasklatch").await
}

/// A pool on `url` with at most `max` connections, whose backends show `application_name`
/// (so an operator — or a test — can find them in `pg_stat_activity`).
pub async fn connect_named(
    url: &str,
    max: u32,
    application_name: &str,
) -> Result<PgPool, sqlx::Error> {
    let opts = PgConnectOptions::from_str(url)?.application_name(application_name);
    PgPoolOptions::new()
        .max_connections(max)
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .connect_with(opts)
        .await
}
