//! What the bench reads from the server: its settings, its commit counter, and the URL it is
//! reached by, without the password.

use sqlx::PgPool;

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
