//! Reading back what the store's statements return: whole task rows (with the row invariants
//! asserted in debug builds), claimed rows with their lease, and the outcome rows of guarded
//! writes.

use super::PgStore;
use crate::error::store_error;
use crate::row::decode_task;
use sqlx::postgres::PgRow;
use sqlx::{Postgres, Row};
use tasklatch_core::event::Fingerprint;
use tasklatch_core::lease::{LeaseKind, Refusal};
use tasklatch_core::status::NotifyStatus;
use tasklatch_core::store::{Claimed, StoreError, WriteOutcome, Written};
use tasklatch_core::task::TaskRow;
use tasklatch_core::transitions::outbox::Recorded;

impl PgStore {
    /// Decodes a row the database returned and, in debug builds (the sim, stress and the tests
    /// run them), asserts the row invariants on it ([`tasklatch_core::invariants`]) — unless a
    /// planted bug is in force, which the simulation's checker must catch from outside.
    pub(super) fn decoded(&self, row: &PgRow) -> Result<TaskRow, StoreError> {
        let task = decode_task(row)?;
        #[cfg(feature = "mutations")]
        let planted = self.inner.mutant.is_some();
        #[cfg(not(feature = "mutations"))]
        let planted = false;
        if !planted {
            tasklatch_core::invariants::debug_check_row(&task);
        }
        Ok(task)
    }

    /// A row just claimed for loop `kind`, with its lease.
    pub(super) fn claimed(&self, r: &PgRow, kind: LeaseKind) -> Result<Claimed, StoreError> {
        let row = self.decoded(r)?;
        let lease = row
            .lease(kind)
            .cloned()
            .ok_or_else(|| StoreError::Unavailable("claimed row has no lease".into()))?;
        Ok(Claimed { row, lease })
    }
}

/// A refusal as the guarded writes spell it; an unknown one is [`StoreError::Unavailable`].
fn refusal_of(s: &str) -> Result<Refusal, StoreError> {
    Ok(match s {
        "no_such_task" => Refusal::NoSuchTask,
        "lease_not_held" => Refusal::LeaseNotHeld,
        "lease_expired" => Refusal::LeaseExpired,
        "version_moved" => Refusal::VersionMoved,
        "cancel_requested" => Refusal::CancelRequested,
        "terminal" => Refusal::Terminal,
        _ => return Err(StoreError::Unavailable("unknown refusal".into())),
    })
}

/// Column `name` of `row`; a missing or mistyped column is [`StoreError::Unavailable`].
pub(crate) fn col<'r, T>(row: &'r PgRow, name: &str) -> Result<T, StoreError>
where
    T: sqlx::Decode<'r, Postgres> + sqlx::Type<Postgres>,
{
    row.try_get::<T, _>(name).map_err(store_error)
}

/// A `bigint` column as a count: negative is [`StoreError::Unavailable`].
pub(crate) fn u64_col(row: &PgRow, name: &str) -> Result<u64, StoreError> {
    let v: i64 = col(row, name)?;
    u64::try_from(v).map_err(|_| StoreError::Unavailable(format!("negative {name}")))
}

/// One outcome row of a guarded write: the refusal, or the outbox after the write.
pub(super) fn outcome(row: &PgRow) -> Result<WriteOutcome, StoreError> {
    if let Some(r) = col::<Option<String>>(row, "refusal")? {
        return Ok(Err(refusal_of(&r)?));
    }
    if !col::<bool>(row, "written")? {
        // The guard held on the locked row, yet the update did not apply: never report a
        // silent success. (Rows are locked first, so this does not happen.)
        tracing::warn!("guarded write passed its guard but was not applied");
        return Ok(Err(Refusal::LeaseNotHeld));
    }
    let event_version = u64_col(row, "event_version")?;
    let recorded = match col::<Option<String>>(row, "recorded")?.as_deref() {
        None => None,
        Some("new") => Some(Recorded::NewVersion(event_version)),
        Some("unchanged") => Some(Recorded::Unchanged),
        Some("cleared") => Some(Recorded::Cleared),
        Some(_) => return Err(StoreError::Unavailable("unknown recorded kind".into())),
    };
    let status: String = col(row, "notify_status")?;
    Ok(Ok(Written {
        recorded,
        event_version,
        notified_version: u64_col(row, "notified_version")?,
        notify_status: status
            .parse::<NotifyStatus>()
            .map_err(|_| StoreError::Unavailable("unknown notify status".into()))?,
        fingerprint: col::<Option<String>>(row, "fingerprint")?.map(Fingerprint),
    }))
}
