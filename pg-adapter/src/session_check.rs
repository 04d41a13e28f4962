//! The check every pooled connection passes before its first use: it really is in tasklatch's
//! schema, with the statement and lock timeouts asked for ([`SessionSettings`]).
//!
//! The settings travel in the connection's start-up packet (`session.rs`). A connection pooler
//! may not pass them on: PgBouncer refuses the start-up parameter `options` unless it is listed
//! in `ignore_startup_parameters`, and then drops it silently. Without its `search_path` a
//! connection resolves the unqualified `tasks` through the server's default path — a host
//! application's `public.tasks` — and runs without timeouts. So a new connection reads what it
//! got (`sql/admin/session_check.sql`, over the simple query protocol) and is refused, with a
//! [`SessionMismatch`] naming the setting, unless:
//!
//! - its first existing schema (`current_schema()`) is the configured one, or, while that schema
//!   does not exist yet (before `tasklatch migrate`), the first entry of its `search_path` is;
//! - its `statement_timeout` and `lock_timeout` are the configured ones, in whole milliseconds.
//!
//! Where the values come from does not matter: the start-up packet, or role and database
//! settings (`ALTER ROLE … SET`, `ALTER DATABASE … SET`) — the way to run behind a pooler that
//! cannot carry start-up options.

use crate::session::{millis, SessionSettings};
use crate::sql;
use sqlx::{PgConnection, Row};
use std::fmt;

/// A connection whose session is not the configured one: the first setting found wrong.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct SessionMismatch {
    /// `search_path`, `statement_timeout` or `lock_timeout`.
    pub setting: &'static str,
    /// What the configuration asks for.
    pub expected: String,
    /// What the connection has.
    pub found: String,
    /// Where that came from, as `pg_settings.source` says (`client`, `user`, `database`,
    /// `default`, …).
    pub source: String,
    /// The configured settings, for the remedy in the message.
    pub wanted: SessionSettings,
}

impl std::error::Error for SessionMismatch {}

impl fmt::Display for SessionMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let w = &self.wanted;
        write!(
            f,
            "the connection's {} is '{}' (source: {}), not '{}': tasklatch's start-up options \
             (search_path, statement_timeout, lock_timeout) did not arrive — a connection pooler \
             (PgBouncer with ignore_startup_parameters = options, or one that drops them) likely \
             removed them, and unqualified names would mean another schema's tables. Connect \
             directly, or set them where every pooled session gets them: ALTER ROLE <role> SET \
             search_path = {}; ALTER ROLE <role> SET statement_timeout = '{}'; ALTER ROLE <role> \
             SET lock_timeout = '{}' (or ALTER DATABASE <db> SET …)",
            self.setting,
            self.found,
            self.source,
            self.expected,
            w.schema,
            millis(w.statement_timeout),
            millis(w.lock_timeout),
        )
    }
}

/// What a connection's session reads (`sql/admin/session_check.sql`).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct SessionFound {
    /// `current_setting('search_path')`.
    pub search_path: String,
    /// `current_schema()`, empty when no schema on the path exists.
    pub current_schema: String,
    /// Where the search_path came from.
    pub search_path_source: String,
    /// `statement_timeout` in milliseconds (`pg_settings.setting`).
    pub statement_timeout_ms: String,
    /// Where it came from.
    pub statement_timeout_source: String,
    /// `lock_timeout` in milliseconds.
    pub lock_timeout_ms: String,
    /// Where it came from.
    pub lock_timeout_source: String,
}

/// Reads `conn`'s session (one round trip, simple query protocol).
pub async fn read_session(conn: &mut PgConnection) -> Result<SessionFound, sqlx::Error> {
    let row = sqlx::raw_sql(sql::SESSION_CHECK).fetch_one(conn).await?;
    let text = |name: &str| -> Result<String, sqlx::Error> {
        row.try_get::<Option<String>, _>(name)
            .map(Option::unwrap_or_default)
    };
    Ok(SessionFound {
        search_path: text("search_path")?,
        current_schema: text("current_schema")?,
        search_path_source: text("search_path_source")?,
        statement_timeout_ms: text("statement_timeout_ms")?,
        statement_timeout_source: text("statement_timeout_source")?,
        lock_timeout_ms: text("lock_timeout_ms")?,
        lock_timeout_source: text("lock_timeout_source")?,
    })
}

/// Refuses `conn` unless its session is `wanted` (the module's rules): a mismatch is
/// `sqlx::Error::Configuration` holding a [`SessionMismatch`]; a failed read is its own error.
pub async fn verify_session(
    conn: &mut PgConnection,
    wanted: &SessionSettings,
) -> Result<(), sqlx::Error> {
    let found = read_session(conn).await?;
    match compare(&found, wanted) {
        None => Ok(()),
        Some(mismatch) => Err(sqlx::Error::Configuration(Box::new(mismatch))),
    }
}

/// The first setting of `found` that is not `wanted`, if any (the module's rules).
pub fn compare(found: &SessionFound, wanted: &SessionSettings) -> Option<SessionMismatch> {
    let mismatch = |setting, expected: String, found: &str, source: &str| SessionMismatch {
        setting,
        expected,
        found: found.to_owned(),
        source: source.to_owned(),
        wanted: wanted.clone(),
    };
    let schema = wanted.schema.as_str();
    let first = first_entry(&found.search_path);
    if found.current_schema != schema && first != schema {
        let (path, source) = (&found.search_path, &found.search_path_source);
        return Some(mismatch("search_path", schema.to_owned(), path, source));
    }
    let whole_ms = |d| millis(d).trim_end_matches("ms").to_owned();
    let timeouts = [
        (
            "statement_timeout",
            whole_ms(wanted.statement_timeout),
            &found.statement_timeout_ms,
            &found.statement_timeout_source,
        ),
        (
            "lock_timeout",
            whole_ms(wanted.lock_timeout),
            &found.lock_timeout_ms,
            &found.lock_timeout_source,
        ),
    ];
    timeouts
        .into_iter()
        .find(|(_, expected, got, _)| got.as_str() != expected.as_str())
        .map(|(name, expected, got, source)| {
            mismatch(name, format!("{expected}ms"), &format!("{got}ms"), source)
        })
}

/// The first entry of a `search_path` value, unquoted (`"$user", public` → `$user`).
fn first_entry(search_path: &str) -> &str {
    let first = search_path.split(',').next().unwrap_or_default().trim();
    first
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn found(path: &str, current: &str, statement: &str, lock: &str) -> SessionFound {
        SessionFound {
            search_path: path.into(),
            current_schema: current.into(),
            search_path_source: "client".into(),
            statement_timeout_ms: statement.into(),
            statement_timeout_source: "client".into(),
            lock_timeout_ms: lock.into(),
            lock_timeout_source: "client".into(),
        }
    }

    #[test]
    fn the_configured_session_passes() {
        let wanted = SessionSettings::default();
        assert_eq!(
            compare(&found("tasklatch", "tasklatch", "30000", "5000"), &wanted),
            None
        );
        // Before migrate: the schema does not exist yet, it is first on the path.
        assert_eq!(
            compare(&found("tasklatch", "", "30000", "5000"), &wanted),
            None
        );
        // A role setting that quotes it, or puts a missing schema before it.
        assert_eq!(
            compare(&found("\"tasklatch\"", "", "30000", "5000"), &wanted),
            None
        );
        let user_first = found("\"$user\", tasklatch", "tasklatch", "30000", "5000");
        assert_eq!(compare(&user_first, &wanted), None);
    }

    #[test]
    fn a_dropped_or_different_setting_is_named() {
        let wanted = SessionSettings {
            statement_timeout: Duration::from_millis(1500),
            ..SessionSettings::default()
        };
        let dropped = found("\"$user\", public", "public", "0", "0");
        let e = compare(&dropped, &wanted).unwrap_or_else(|| panic!("passed"));
        assert_eq!(
            (e.setting, e.found.as_str()),
            ("search_path", "\"$user\", public")
        );
        let text = e.to_string();
        assert!(
            text.contains("pooler") && text.contains("ALTER ROLE"),
            "{text}"
        );
        assert!(text.contains("statement_timeout = '1500ms'"), "{text}");
        let timeouts = found("tasklatch", "tasklatch", "0", "5000");
        let e = compare(&timeouts, &wanted).unwrap_or_else(|| panic!("passed"));
        assert_eq!((e.setting, e.found.as_str()), ("statement_timeout", "0ms"));
        let lock = found("tasklatch", "tasklatch", "1500", "100");
        let e = compare(&lock, &wanted).unwrap_or_else(|| panic!("passed"));
        assert_eq!((e.setting, e.expected.as_str()), ("lock_timeout", "5000ms"));
    }
}
