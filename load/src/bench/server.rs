//! What the bench reads from the server: its settings, its commit counter, the row versions
//! written to its tables, and the URL it is reached by, without the password.

use sqlx::PgPool;
use std::time::Duration;

/// The settings that matter for throughput, as the server reports them.
const SETTINGS: [&str; 7] = [
    "server_version",
    "fsync",
    "synchronous_commit",
    "wal_sync_method",
    "full_page_writes",
    "shared_buffers",
    "max_connections",
];

/// Transactions the current database committed so far (`pg_stat_database`).
pub(super) async fn commits(pool: &PgPool) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT (xact_commit)::bigint FROM pg_stat_database WHERE datname = current_database()",
    )
    .fetch_one(pool)
    .await
}

/// How long a backend may keep the counts of its finished transactions to itself: an idle
/// backend reports them within `PGSTAT_IDLE_INTERVAL` (10 s since Postgres 15), a busy one at
/// most a second after its last report. Waiting this long after a phase ends makes the
/// cumulative counters (`pg_stat_database`, `pg_stat_user_tables`) hold the whole phase.
pub(super) const STATS_SETTLE: Duration = Duration::from_millis(11_000);

/// Row versions written to one table so far (`pg_stat_user_tables`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RowWrites {
    /// Updated rows: each a new row version.
    pub updates: i64,
    /// Of those, heap-only updates (no index entry written).
    pub hot: i64,
}

impl RowWrites {
    /// The writes between `before` and `self`.
    pub(super) fn since(self, before: RowWrites) -> RowWrites {
        RowWrites {
            updates: self.updates - before.updates,
            hot: self.hot - before.hot,
        }
    }
}

/// The row versions written to table `table` of the current database so far.
pub(super) async fn row_writes(pool: &PgPool, table: &str) -> Result<RowWrites, sqlx::Error> {
    let (updates, hot): (i64, i64) = sqlx::query_as(
        "SELECT n_tup_upd::bigint, n_tup_hot_upd::bigint FROM pg_stat_user_tables \
         WHERE relname = $1",
    )
    .bind(table)
    .fetch_optional(pool)
    .await?
    .unwrap_or((0, 0));
    Ok(RowWrites { updates, hot })
}

/// The commit count and the row versions of `tasks` and `runs`, after waiting
/// [`STATS_SETTLE`] for every backend to report what it did.
pub(super) async fn settled_counts(pool: &PgPool) -> Result<Counts, sqlx::Error> {
    tokio::time::sleep(STATS_SETTLE).await;
    Ok(Counts {
        commits: commits(pool).await?,
        tasks: row_writes(pool, "tasks").await?,
        runs: row_writes(pool, "runs").await?,
    })
}

/// What the server counted at one moment.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Counts {
    pub commits: i64,
    pub tasks: RowWrites,
    pub runs: RowWrites,
}

/// Each of [`SETTINGS`] with its value (or why it could not be read).
pub(super) async fn settings(pool: &PgPool) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for name in SETTINGS {
        let v: Result<String, _> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SHOW {name}")))
            .fetch_one(pool)
            .await;
        out.push((name.to_owned(), v.unwrap_or_else(|e| format!("? ({e})"))));
    }
    out
}

/// A URL without its password.
pub(super) fn redact_url(url: &str) -> String {
    match (url.find("://"), url.find('@')) {
        (Some(s), Some(at)) if at > s => {
            let creds = &url[s + 3..at];
            match creds.find(':') {
                Some(c) => format!("{}{}:***{}", &url[..s + 3], &creds[..c], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_password() {
        assert_eq!(
            redact_url("postgres://u:secret@h:1/db"),
            "postgres://u:***@h:1/db"
        );
        assert_eq!(redact_url("postgres://u@h/db"), "postgres://u@h/db");
    }
}
