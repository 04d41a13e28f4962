//! Where tasklatch lives inside a database and how long its statements may wait: the settings
//! every pooled connection starts with.
//!
//! tasklatch is a library in someone else's database. All its objects — the tables, the
//! sequence, the functions and sqlx's migration history `_sqlx_migrations` — live in one schema
//! of their own ([`SchemaName`], default `tasklatch`), so nothing collides with a host
//! application's `public.tasks` or its own `public._sqlx_migrations`. The schema is selected by
//! the connection's `search_path`, set in the startup packet (`-c search_path=<schema>`): the
//! named SQL files stay unqualified and mean the configured schema on every connection, from the
//! first statement on, with no extra round trip. The functions do not depend on their caller's
//! `search_path` (migration 0008 pins it), so a host application's session may fire the
//! triggers or call them safely.
//!
//! The same startup packet sets `statement_timeout` and `lock_timeout` ([`SessionSettings`]):
//! no store or ledger call can wait forever on a row lock (`FOR UPDATE`, a guarded `UPDATE`)
//! or run unbounded; a call that hits either limit fails as unavailable (SQLSTATE 55P03 or
//! 57014, see `error.rs`) and the loops release and retry, as for any other unavailable store.

use sqlx::postgres::PgConnectOptions;
use std::fmt;
use std::time::Duration;

/// The schema tasklatch lives in: 1 to 63 characters, a lower-case ASCII letter or `_` first,
/// then lower-case letters, digits or `_` — an identifier Postgres never folds or needs quoted
/// (so it is safe in a startup option, a `search_path` and SQL text alike). Not `pg_*`, not
/// `information_schema` (reserved by Postgres).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct SchemaName(String);

/// The default schema.
pub const DEFAULT_SCHEMA: &str = "tasklatch";

/// Why a schema name is refused (the name itself is not repeated).
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("must be 1 to 63 characters of a-z, 0-9 and _, not starting with a digit, not pg_* or information_schema")]
pub struct InvalidSchemaName;

impl SchemaName {
    /// Checks `name` (see the type's documentation).
    pub fn new(name: &str) -> Result<SchemaName, InvalidSchemaName> {
        let mut chars = name.chars();
        let first_ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c == '_');
        let rest_ok = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        let reserved = name.starts_with("pg_") || name == "information_schema";
        if first_ok && rest_ok && name.len() <= 63 && !reserved {
            Ok(SchemaName(name.to_owned()))
        } else {
            Err(InvalidSchemaName)
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for SchemaName {
    fn default() -> Self {
        SchemaName(DEFAULT_SCHEMA.to_owned())
    }
}

impl fmt::Display for SchemaName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The default `lock_timeout`: row locks are held only by claims and guarded writes, which
/// commit in milliseconds; waiting 5 s means something else (an operator's or a host
/// application's open transaction) holds the row, and the call is better failed and retried
/// than left holding a lane and a pooled connection. Well below the default `min_lease_left`
/// (30 s), so a write that gives up still leaves its lease time to release and retry.
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(5);

/// The default `statement_timeout`: the largest statement is a claim or a batched write of at
/// most `MAX_BATCH` rows over indexes (milliseconds); 30 s — the default `min_lease_left`, the
/// margin a lease keeps for its writes — bounds a pathological one without ever cutting a
/// healthy one.
pub const DEFAULT_STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);

/// What every pooled connection of the store and the ledger starts with.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct SessionSettings {
    /// The schema (the connection's `search_path`).
    pub schema: SchemaName,
    /// `statement_timeout`: the longest a statement may run. Must be at least 1 ms (0 would
    /// mean "no limit").
    pub statement_timeout: Duration,
    /// `lock_timeout`: the longest a statement may wait for a lock. At least 1 ms, at most the
    /// statement timeout.
    pub lock_timeout: Duration,
}

impl Default for SessionSettings {
    fn default() -> Self {
        SessionSettings {
            schema: SchemaName::default(),
            statement_timeout: DEFAULT_STATEMENT_TIMEOUT,
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
        }
    }
}

impl SessionSettings {
    /// `opts` whose connections start with this schema as their `search_path` and these
    /// timeouts (startup options; they replace same-named options given in a URL).
    pub fn apply(&self, opts: PgConnectOptions) -> PgConnectOptions {
        opts.options([
            ("search_path", self.schema.as_str().to_owned()),
            ("statement_timeout", millis(self.statement_timeout)),
            ("lock_timeout", millis(self.lock_timeout)),
        ])
    }
}

/// A duration as a Postgres time setting in whole milliseconds, at least 1 (0 means "off").
pub(crate) fn millis(d: Duration) -> String {
    format!("{}ms", d.as_millis().max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names_are_plain_identifiers() {
        for ok in ["tasklatch", "_t", "app_tasklatch_2", &"a".repeat(63)] {
            assert!(SchemaName::new(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "Tasklatch",
            "1abc",
            "a-b",
            "a b",
            "a\"b",
            "pg_x",
            "information_schema",
            &"a".repeat(64),
        ] {
            assert_eq!(SchemaName::new(bad), Err(InvalidSchemaName), "{bad}");
        }
    }

    #[test]
    fn timeouts_are_whole_milliseconds_never_zero() {
        assert_eq!(millis(Duration::from_secs(5)), "5000ms");
        assert_eq!(millis(Duration::from_micros(10)), "1ms");
    }
}
