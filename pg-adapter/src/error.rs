//! Mapping database errors onto the store's error contract.
//!
//! - unique violations: [`StoreError::DuplicateTask`] (primary key) or
//!   [`StoreError::DuplicateHandle`] (the remote-handle index);
//! - CHECK, NOT NULL and data exceptions (SQLSTATE class 22, 23): [`StoreError::Invalid`] — the
//!   input is at fault, retrying it alone cannot help;
//! - everything else (connection loss, pool timeout, terminated backend, deadlock, serialization
//!   failure, shutdown, and `25006` read_only_sql_transaction — a server that stopped being the
//!   primary, or a standby, during a failover): [`StoreError::Unavailable`] — the transaction may
//!   or may not have committed, and a retry on the new primary can succeed.
//!
//! Messages never carry row values (the database's own messages may quote them, so only the
//! constraint name or the SQLSTATE is kept): no secret can leak through an error.

use tasklatch_core::ledger::LedgerError;
use tasklatch_core::store::StoreError;

/// The error of a row that does not decode (a schema invariant broken): names the column only.
pub(crate) fn corrupt(col: &str) -> StoreError {
    StoreError::Unavailable(format!("stored row does not decode (column {col})"))
}

/// SQLSTATE read_only_sql_transaction: a write on a standby or a read-only server.
const READ_ONLY_TRANSACTION: &str = "25006";

/// Maps a sqlx error to a [`StoreError`] (see the module documentation).
pub fn store_error(e: sqlx::Error) -> StoreError {
    if let sqlx::Error::Database(db) = &e {
        let code = db.code().map(|c| c.into_owned()).unwrap_or_default();
        let constraint = db.constraint().unwrap_or("").to_owned();
        if code == "23505" {
            return if constraint == "tasks_pkey" {
                StoreError::DuplicateTask
            } else if constraint == "tasks_tracked_handle_unique"
                || constraint == "tasks_handle_unique"
            {
                StoreError::DuplicateHandle
            } else {
                StoreError::Invalid(format!("unique constraint {constraint} violated"))
            };
        }
        if code == READ_ONLY_TRANSACTION {
            return StoreError::Unavailable(format!(
                "the server takes no writes (SQLSTATE {code}): not the primary, a failover is \
                 likely under way"
            ));
        }
        if code == "23514" {
            return StoreError::Invalid(format!("constraint {constraint} violated"));
        }
        if code.starts_with("22") || code.starts_with("23") {
            return StoreError::Invalid(format!("rejected by the database (SQLSTATE {code})"));
        }
        return StoreError::Unavailable(format!("database error (SQLSTATE {code})"));
    }
    StoreError::Unavailable(describe(&e))
}

/// Maps a sqlx error to a [`LedgerError`].
pub fn ledger_error(e: sqlx::Error) -> LedgerError {
    if let sqlx::Error::Database(db) = &e {
        let code = db.code().map(|c| c.into_owned()).unwrap_or_default();
        return LedgerError(format!("database error (SQLSTATE {code})"));
    }
    LedgerError(describe(&e))
}

fn describe(e: &sqlx::Error) -> String {
    match e {
        sqlx::Error::PoolTimedOut => "connection pool timed out".into(),
        sqlx::Error::PoolClosed => "connection pool closed".into(),
        sqlx::Error::Io(io) if io.kind() == std::io::ErrorKind::NotFound => {
            "i/o error: entity not found (a Unix socket that does not exist: with a host list, no \
             host is the primary now)"
                .into()
        }
        sqlx::Error::Io(io) => format!("i/o error: {}", io.kind()),
        sqlx::Error::Protocol(_) => "protocol error".into(),
        sqlx::Error::WorkerCrashed => "connection worker crashed".into(),
        sqlx::Error::ColumnDecode { index, .. } => format!("column {index} does not decode"),
        other => {
            let s = other.to_string();
            s.chars().take(200).collect()
        }
    }
}
