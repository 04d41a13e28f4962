//! Retention (`Store::prune_finished`): only settled, finished rows go, oldest first, in
//! bounded batches; undelivered work, dispatches in flight, cancels still to do, held leases
//! and live tasks always stay.

use super::support::*;
use crate::lease::LeaseKind;
use crate::policy::MAX_BATCH;
use crate::status::{CancelStatus, RemoteStatus};
use crate::store::*;
use crate::transitions::outbox::NotifyAction;

/// Inserts `id`, polls it to `status` at `at` seconds; the row's id.
async fn polled_to<S: Store>(s: &S, id: &str, status: RemoteStatus, at: i64) {
    s.insert_task(submitted(id, t(at))).await.unwrap();
    poll_once(s, id, at, |r| report(r, status, t(at)))
        .await
        .unwrap();
}

/// Claims `id`'s notification at `at` seconds (60 s lease) and applies `action` at `at + 1`
/// unless it is `None` (the claim is then left held).
async fn notified<S: Store>(s: &S, id: &str, at: i64, action: Option<NotifyAction>) {
    let c = claim(s, LeaseKind::Notify, "n", t(at), MAX_BATCH)
        .await
        .into_iter()
        .find(|c| c.row.id().0 == id)
        .expect("claimable");
    if let Some(action) = action {
        notify(s, &c, action, at + 1).await.unwrap();
    }
}

/// A prune whose dead letters age like every other row (both cutoffs at `finished_before`).
fn prune(now: i64, finished_before: i64, limit: usize) -> PruneRequest {
    PruneRequest {
        now: t(now),
        finished_before: t(finished_before),
        dead_letters_before: t(finished_before),
        limit,
    }
}

async fn ids_left<S: Store>(s: &S) -> Vec<String> {
    s.admin_rows(None, 10_000)
        .await
        .unwrap()
        .iter()
        .map(|r| r.id().0.clone())
        .collect()
}

/// Settled finished rows go (delivered, dead-lettered, or with nothing ever to say); every
/// other row stays exactly as it was.
pub async fn prune_deletes_only_settled_finished_rows<S: Store>(s: &S) {
    // Go: delivered; dead-lettered (thread gone); a terminal row that never had an event.
    polled_to(s, "delivered", RemoteStatus::Completed, 0).await;
    notified(s, "delivered", 1, Some(NotifyAction::RunSucceeded)).await;
    polled_to(s, "dead", RemoteStatus::Failed, 0).await;
    notified(s, "dead", 1, Some(NotifyAction::ThreadGone)).await;
    let mut quiet = submitted("quiet", t(0));
    quiet.remote.status = RemoteStatus::Cancelled;
    quiet.poll.next_poll_at = None;
    s.insert_task(quiet).await.unwrap();

    // Stay: undelivered; dispatch in flight (lease held); finished after the cutoff; still
    // running; a cancel still to do.
    polled_to(s, "undelivered", RemoteStatus::Completed, 0).await;
    polled_to(s, "in-flight", RemoteStatus::Completed, 0).await;
    notified(s, "in-flight", 5, None).await;
    polled_to(s, "recent", RemoteStatus::Completed, 200).await;
    notified(s, "recent", 201, Some(NotifyAction::RunSucceeded)).await;
    polled_to(s, "working", RemoteStatus::Working, 0).await;
    let mut cancelling = submitted("cancelling", t(0));
    cancelling.remote.status = RemoteStatus::Completed;
    cancelling.poll.next_poll_at = None;
    cancelling.cancel.requested_at = Some(t(1));
    cancelling.cancel.status = CancelStatus::Requested;
    cancelling.cancel.due_at = Some(t(1));
    s.insert_task(cancelling).await.unwrap();

    let before = s.admin_rows(None, 10_000).await.unwrap();
    let pruned = s.prune_finished(prune(10, 100, MAX_BATCH)).await.unwrap();
    assert_eq!(pruned.tasks, 3, "{pruned:?}");
    let kept: Vec<_> = before
        .into_iter()
        .filter(|r| !["delivered", "dead", "quiet"].contains(&r.id().0.as_str()))
        .collect();
    assert_eq!(
        s.admin_rows(None, 10_000).await.unwrap(),
        kept,
        "the rest untouched"
    );
    assert_eq!(
        ids_left(s).await,
        [
            "cancelling",
            "in-flight",
            "recent",
            "undelivered",
            "working"
        ]
    );

    // Nothing more to do at the same cutoff; the in-flight row stays even once its lease
    // expired (its dispatch is still in flight), and the recent one goes when its time comes.
    assert_eq!(
        s.prune_finished(prune(10, 100, MAX_BATCH))
            .await
            .unwrap()
            .tasks,
        0
    );
    let later = s
        .prune_finished(prune(1_000, 1_000, MAX_BATCH))
        .await
        .unwrap();
    assert_eq!(later.tasks, 1);
    assert_eq!(
        ids_left(s).await,
        ["cancelling", "in-flight", "undelivered", "working"]
    );
}

/// A prune deletes at most its limit, oldest remote update first (then id); a limit above
/// the batch bound is invalid and deletes nothing.
pub async fn prune_in_bounded_batches_oldest_first<S: Store>(s: &S) {
    for (id, at) in [("c", 3), ("a", 2), ("b", 2), ("d", 1)] {
        let mut row = submitted(id, t(at));
        row.remote.status = RemoteStatus::Completed;
        row.remote.updated_at = t(at);
        row.poll.next_poll_at = None;
        s.insert_task(row).await.unwrap();
    }
    let refused = s.prune_finished(prune(10, 100, MAX_BATCH + 1)).await;
    assert!(
        matches!(refused, Err(StoreError::Invalid(_))),
        "{refused:?}"
    );
    assert_eq!(ids_left(s).await, ["a", "b", "c", "d"]);

    assert_eq!(s.prune_finished(prune(10, 100, 2)).await.unwrap().tasks, 2);
    assert_eq!(
        ids_left(s).await,
        ["b", "c"],
        "d (oldest), then a (tie, smaller id)"
    );
    assert_eq!(s.prune_finished(prune(10, 100, 2)).await.unwrap().tasks, 2);
    assert_eq!(s.prune_finished(prune(10, 100, 2)).await.unwrap().tasks, 0);
    assert!(ids_left(s).await.is_empty());
}

/// A row ages from the later of its last remote change and its notification settling, and a
/// dead letter from the moment it became one, by its own cutoff: a task that ended long ago
/// whose notification was delivered or dead-lettered just now stays.
pub async fn prune_ages_from_settling_and_keeps_fresh_dead_letters<S: Store>(s: &S) {
    polled_to(s, "late-delivered", RemoteStatus::Completed, 0).await;
    notified(s, "late-delivered", 500, Some(NotifyAction::RunSucceeded)).await;
    polled_to(s, "late-dead", RemoteStatus::Failed, 0).await;
    notified(s, "late-dead", 500, Some(NotifyAction::ThreadGone)).await;
    let fresh = PruneRequest {
        now: t(600),
        finished_before: t(300),
        dead_letters_before: t(300),
        limit: MAX_BATCH,
    };
    assert_eq!(
        s.prune_finished(fresh).await.unwrap().tasks,
        0,
        "settled at 501"
    );
    // Old enough for the rows' age, not for the dead letter's own one.
    let dead_letter_young = PruneRequest {
        now: t(700),
        finished_before: t(600),
        dead_letters_before: t(400),
        limit: MAX_BATCH,
    };
    let pruned = s.prune_finished(dead_letter_young).await.unwrap();
    assert_eq!(pruned.tasks, 1, "{pruned:?}");
    assert_eq!(ids_left(s).await, ["late-dead"]);
    let later = s
        .prune_finished(prune(2_000, 1_000, MAX_BATCH))
        .await
        .unwrap();
    assert_eq!(later.tasks, 1, "the dead letter aged by its own limit");
    assert!(ids_left(s).await.is_empty());
}
