//! Builders the conformance bodies share, public so a store's own tests can use them too: time,
//! rows, reports, claims, leases, and one-step helpers (poll once, notify once).
//!
//! Every store under test must be built with [`policy`]: the bodies compute due times from it.

use crate::identity::Identity;
use crate::ids::{TaskId, WorkerId};
use crate::lease::{Lease, LeaseKind, LeaseToken};
use crate::policy::Policy;
use crate::ports::RunRequest;
use crate::remote::{ErrorClass, PollError};
use crate::secret::{RemoteHandle, Secret};
use crate::snapshot::Observed;
use crate::status::RemoteStatus;
use crate::store::{ClaimRequest, Claimed, NotifyWrite, PollWrite, Scope, Store, WriteOutcome};
use crate::task::TaskRow;
use crate::time::Timestamp;
use crate::transitions::outbox::NotifyAction;
use crate::transitions::poll::{self, PollUpdate};
use crate::transitions::submit;
use std::time::Duration;

/// The policy every store under test uses.
pub fn policy() -> Policy {
    Policy::default()
}

/// Test time: `secs` seconds after a fixed epoch.
pub fn t(secs: i64) -> Timestamp {
    Timestamp::from_micros(1_700_000_000_000_000 + secs * 1_000_000)
}

/// A task's identity on server `srv`, with a handle derived from its id.
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

/// A freshly submitted task of alice in th1, named as its id (no first report: due for its
/// first poll at `at`).
pub fn submitted(id: &str, at: Timestamp) -> TaskRow {
    submitted_in(id, "alice", "th1", id, at)
}

/// A freshly submitted task in `owner`/`thread` named `name`.
pub fn submitted_in(id: &str, owner: &str, thread: &str, name: &str, at: Timestamp) -> TaskRow {
    submit::new_row(identity(id, owner, thread, name, at), None, at, &policy())
}

/// An observed remote state, with content fitting the status.
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
pub fn report(row: &TaskRow, status: RemoteStatus, at: Timestamp) -> PollUpdate {
    poll::on_report(row, Ok(observed(status)), at, &policy())
}

/// The update a worker computes after a failed poll of `row` (a timeout saying `message`).
pub fn failure(row: &TaskRow, message: &str, at: Timestamp) -> PollUpdate {
    let error = PollError {
        class: ErrorClass::Timeout,
        message: message.into(),
    };
    poll::on_failure(row, error, at, &policy())
}

/// A claim request of `worker` at `now` for 60 s leases.
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
        token: LeaseToken(token),
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

/// Claims task `id` for polling at `now` and applies the update `make` computes from the
/// claimed row; the write's outcome.
pub async fn poll_once<S: Store>(
    s: &S,
    id: &str,
    now: i64,
    make: impl Fn(&TaskRow) -> PollUpdate,
) -> WriteOutcome {
    let c = claim(s, LeaseKind::Poll, "w", t(now), 100).await;
    let c = c
        .into_iter()
        .find(|c| c.row.id() == &TaskId::from(id))
        .expect("claimed");
    let update = make(&c.row);
    s.apply_polls(
        vec![PollWrite {
            task_id: id.into(),
            lease: c.lease,
            completed_at: t(now),
            update,
        }],
        t(now),
    )
    .await
    .unwrap()
    .remove(0)
}

/// Inserts "a", polls it to `status` at t(0), returns the notify claim at t(1).
pub async fn with_event<S: Store>(s: &S, status: RemoteStatus) -> Claimed {
    s.insert_task(submitted("a", t(0))).await.unwrap();
    poll_once(s, "a", 0, |r| report(r, status, t(0)))
        .await
        .unwrap();
    let mut c = claim(s, LeaseKind::Notify, "n1", t(1), 10).await;
    assert_eq!(ids(&c), ["a"]);
    c.remove(0)
}

/// Applies one notification step under claim `c` at `now`; the write's outcome.
pub async fn notify(s: &impl Store, c: &Claimed, action: NotifyAction, now: i64) -> WriteOutcome {
    s.finish_notifications(
        vec![NotifyWrite {
            task_id: c.row.id().clone(),
            lease: c.lease.clone(),
            dispatch_version: c.row.outbox.dispatch_version,
            action,
        }],
        t(now),
    )
    .await
    .unwrap()
    .remove(0)
}

/// A run request with a fixed prompt.
pub fn run_req(key: &str, owner: &str, thread: &str) -> RunRequest {
    RunRequest {
        key: key.into(),
        owner: owner.into(),
        thread: thread.into(),
        prompt: "p".into(),
    }
}
