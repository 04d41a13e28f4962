//! Helpers shared by the conformance suite and the differential test: rows, reports, leases,
//! and the normalisation that compares a store that keeps NUL (MemStore) with one that makes
//! text storable (PgStore).
#![allow(dead_code)]

use std::time::Duration;
use tasklatch_core::ids::{TaskId, WorkerId};
use tasklatch_core::lease::{Lease, LeaseKind};
use tasklatch_core::policy::Policy;
use tasklatch_core::secret::{RemoteHandle, Secret};
use tasklatch_core::snapshot::Observed;
use tasklatch_core::status::RemoteStatus;
use tasklatch_core::store::{ClaimRequest, Claimed, Scope, Store};
use tasklatch_core::task::{ErrorClass, Identity, PollError, TaskRow};
use tasklatch_core::time::Timestamp;
use tasklatch_core::transitions::{poll, submit};

/// The policy both stores use in every test.
pub fn policy() -> Policy {
    Policy::default()
}

/// Test time: `secs` seconds after a fixed epoch.
pub fn t(secs: i64) -> Timestamp {
    Timestamp::from_micros(1_700_000_000_000_000 + secs * 1_000_000)
}

/// A task's identity.
pub fn identity(id: &str, owner: &str, thread: &str, name: &str, at: Timestamp) -> Identity {
    Identity {
        task_id: id.into(),
        owner: owner.into(),
        thread: thread.into(),
        server: "srv".into(),
        name: name.into(),
        handle: RemoteHandle {
            remote_task_id: Secret::new(format!("remote-{id}")),
            driver_data: Secret::new(format!("driver-{id}")),
        },
        created_at: at,
    }
}

/// A freshly submitted task (no first report: due for its first poll at `at`).
pub fn submitted(id: &str, at: Timestamp) -> TaskRow {
    submit::new_row(identity(id, "alice", "th1", id, at), None, at, &policy())
}

/// A task in `owner`/`thread` named `name`.
pub fn submitted_in(id: &str, owner: &str, thread: &str, name: &str, at: Timestamp) -> TaskRow {
    submit::new_row(identity(id, owner, thread, name, at), None, at, &policy())
}

/// An observed remote state.
pub fn observed(status: RemoteStatus) -> Observed {
    Observed {
        status,
        result: (status == RemoteStatus::Completed).then(|| "42".to_owned()),
        result_truncated: false,
        artifact: None,
        error: (status == RemoteStatus::Failed).then(|| "boom".to_owned()),
        input_request: (status == RemoteStatus::InputRequired).then(|| "which one?".to_owned()),
        poll_hint: None,
    }
}

/// The update a worker computes after a successful poll of `row`.
pub fn report(row: &TaskRow, status: RemoteStatus, at: Timestamp) -> poll::PollUpdate {
    poll::on_report(row, Ok(observed(status)), at, &policy())
}

/// The update a worker computes after a failed poll of `row`.
pub fn failure(row: &TaskRow, message: &str, at: Timestamp) -> poll::PollUpdate {
    poll::on_failure(
        row,
        PollError {
            class: ErrorClass::Timeout,
            message: message.into(),
        },
        at,
        &policy(),
    )
}

/// A claim request.
pub fn req(worker: &str, now: Timestamp, limit: usize) -> ClaimRequest {
    ClaimRequest {
        worker: WorkerId::from(worker),
        now,
        lease_for: Duration::from_secs(60),
        limit,
    }
}

/// Claims and unwraps.
pub async fn claim<S: Store>(
    s: &S,
    kind: LeaseKind,
    worker: &str,
    now: Timestamp,
    limit: usize,
) -> Vec<Claimed> {
    s.claim(kind, req(worker, now, limit)).await.expect("claim")
}

/// The ids of claimed rows, in order.
pub fn ids(claimed: &[Claimed]) -> Vec<String> {
    claimed.iter().map(|c| c.row.id().0.clone()).collect()
}

/// A lease like `l` with another token.
pub fn with_token(l: &Lease, token: u64) -> Lease {
    Lease {
        token: tasklatch_core::lease::LeaseToken(token),
        ..l.clone()
    }
}

/// The scope of alice in th1.
pub fn alice() -> Scope {
    Scope {
        owner: "alice".into(),
        thread: "th1".into(),
    }
}

/// One row by id (unscoped).
pub async fn row<S: Store>(s: &S, id: &str) -> TaskRow {
    let rows = s.admin_rows(None, 10_000).await.expect("admin rows");
    rows.into_iter()
        .find(|r| r.id() == &TaskId::from(id))
        .expect("row exists")
}

/// Replaces NUL with U+FFFD in every string of a serialisable value: a store that keeps NUL and
/// one that makes text storable then compare equal.
pub fn normalised<T: serde::Serialize>(v: &T) -> serde_json::Value {
    fn walk(v: serde_json::Value) -> serde_json::Value {
        use serde_json::Value;
        match v {
            Value::String(s) => Value::String(s.replace('\0', "\u{FFFD}")),
            Value::Array(a) => Value::Array(a.into_iter().map(walk).collect()),
            Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, walk(v))).collect()),
            other => other,
        }
    }
    walk(serde_json::to_value(v).expect("serialisable"))
}
