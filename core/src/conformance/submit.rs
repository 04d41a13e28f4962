//! Settling a submit's intent (DOMAIN §7): the handle recorded once, a withdrawal, and a late
//! handle that another row already tracks.

use super::support::*;
use crate::secret::RemoteHandle;
use crate::status::RemoteStatus;
use crate::store::*;
use crate::task::TaskRow;
use crate::transitions::submit;

/// The intent of task `id` (alice, th1) stored at `at`: no handle yet.
fn intent(id: &str, at: crate::time::Timestamp) -> TaskRow {
    let mut who = identity(id, "alice", "th1", id, at);
    who.handle = RemoteHandle::unrecorded();
    submit::new_intent(who, at, &policy())
}

/// The row a submit of task `id` builds once the remote task `remote` started.
fn started(id: &str, remote: &str, at: crate::time::Timestamp) -> Box<TaskRow> {
    let mut row = submitted(id, at);
    row.identity.handle = submitted(remote, at).identity.handle;
    Box::new(row)
}

/// Seconds from t(0) to the end of an intent's grace under [`policy`].
fn grace_secs() -> i64 {
    i64::try_from(policy().submit_grace.as_secs()).expect("grace fits")
}

/// A handle is recorded on its intent once; a retry answers `Recorded` again; a withdrawal of
/// a row that no longer waits changes nothing; a withdrawn intent is gone.
pub async fn intent_records_its_handle_once_and_withdraws<S: Store>(s: &S) {
    s.insert_task(intent("a", t(0))).await.unwrap();
    s.insert_task(intent("w", t(0))).await.unwrap();
    for _ in 0..2 {
        let settled = s
            .settle_submit(
                &"a".into(),
                SubmitSettlement::Started(started("a", "a", t(1))),
                t(1),
            )
            .await
            .unwrap();
        assert_eq!(settled, SubmitSettled::Recorded);
    }
    assert_eq!(
        row(s, "a").await.identity.handle,
        submitted("a", t(0)).identity.handle
    );
    for (id, expected) in [
        ("a", SubmitSettled::NotAwaiting),
        ("w", SubmitSettled::Withdrawn),
        ("w", SubmitSettled::NotAwaiting),
    ] {
        let settled = s
            .settle_submit(&id.into(), SubmitSettlement::Withdrawn, t(2))
            .await;
        assert_eq!(settled.unwrap(), expected, "{id}");
    }
    let ids: Vec<_> = s
        .admin_rows(None, 10)
        .await
        .unwrap()
        .iter()
        .map(|r| r.id().0.clone())
        .collect();
    assert_eq!(ids, ["a"]);
}

/// A handle another row of the owner already tracks is a duplicate whether this intent still
/// waits, was ended as untracked, or is gone — never `NotAwaiting`, whose answer is a
/// compensating cancel of a remote task someone else follows.
pub async fn a_late_handle_tracked_elsewhere_is_a_duplicate<S: Store>(s: &S) {
    s.insert_task(submitted("tracker", t(0))).await.unwrap();
    for id in ["waiting", "ended", "gone"] {
        s.insert_task(intent(id, t(0))).await.unwrap();
    }
    let grace = grace_secs();
    let ended = poll_once(s, "ended", grace, |r| {
        submit::untracked(r, t(grace), &policy())
    })
    .await;
    assert!(ended.is_ok(), "the intent ends as untracked: {ended:?}");
    assert_eq!(row(s, "ended").await.remote.status, RemoteStatus::Failed);
    let gone = s
        .settle_submit(&"gone".into(), SubmitSettlement::Withdrawn, t(1))
        .await;
    assert_eq!(gone.unwrap(), SubmitSettled::Withdrawn);
    for id in ["waiting", "ended", "gone"] {
        let late = SubmitSettlement::Started(started(id, "tracker", t(1)));
        let settled = s.settle_submit(&id.into(), late, t(grace + 1)).await;
        assert_eq!(settled, Err(StoreError::DuplicateHandle), "{id}");
    }
    assert!(row(s, "waiting").await.identity.handle.is_unrecorded());
}
