//! The run ledger: one run per key, 409 for a busy thread, 404 for a missing one (DOMAIN §3).

use super::support::*;
use crate::ids::RunId;
use crate::ledger::RunLedger;
use crate::ports::{LaunchOutcome, RunStatus};

/// Starts the run of `key` for `owner` on `thread` at `t(at)`.
async fn start<L: RunLedger>(
    l: &L,
    key: &str,
    owner: &str,
    thread: &str,
    at: i64,
) -> LaunchOutcome {
    l.start_run(&run_req(key, owner, thread), t(at))
        .await
        .unwrap()
}

/// Creates `owner`'s `thread` at `t(at)`.
async fn open<L: RunLedger>(l: &L, owner: &str, thread: &str, at: i64) {
    l.create_thread(&owner.into(), &thread.into(), t(at))
        .await
        .unwrap();
}

/// The same idempotency key always yields the same run.
pub async fn ledger_same_key_same_run<L: RunLedger>(l: &L) {
    open(l, "alice", "t1", 0).await;
    let a = start(l, "k1", "alice", "t1", 1).await;
    assert_eq!(a, LaunchOutcome::Started(RunId::from("run-1")));
    assert_eq!(start(l, "k1", "alice", "t1", 2).await, a);
    // Even after the run ended and the thread was deleted, the key answers with its run.
    l.finish_run(&RunId::from("run-1"), RunStatus::Success, t(3))
        .await
        .unwrap();
    l.delete_thread(&"t1".into(), t(4)).await.unwrap();
    assert_eq!(start(l, "k1", "alice", "t1", 5).await, a);
    let runs = l.runs().await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].key, "k1");
    assert_eq!(runs[0].created_at, t(1));
    assert_eq!(runs[0].finished_at, Some(t(3)));
    assert_eq!(runs[0].status, RunStatus::Success);
}

/// A thread with an active run answers 409 to another key.
pub async fn ledger_busy_thread_409<L: RunLedger>(l: &L) {
    open(l, "alice", "t1", 0).await;
    open(l, "alice", "t2", 0).await;
    let a = start(l, "k1", "alice", "t1", 1).await;
    assert_eq!(start(l, "k2", "alice", "t1", 1).await, LaunchOutcome::Busy);
    assert_eq!(
        start(l, "k3", "alice", "t2", 1).await,
        LaunchOutcome::Started(RunId::from("run-2")),
        "another thread is free"
    );
    let LaunchOutcome::Started(run) = a else {
        panic!("started")
    };
    l.finish_run(&run, RunStatus::Timeout, t(2)).await.unwrap();
    assert_eq!(
        start(l, "k2", "alice", "t1", 3).await,
        LaunchOutcome::Started(RunId::from("run-3"))
    );
    assert_eq!(l.runs().await.unwrap().len(), 3);
}

/// A missing, deleted or foreign thread answers 404 and creates nothing.
pub async fn ledger_missing_deleted_foreign_thread_404<L: RunLedger>(l: &L) {
    assert_eq!(
        start(l, "k1", "alice", "nope", 0).await,
        LaunchOutcome::ThreadGone
    );
    open(l, "alice", "t1", 0).await;
    assert_eq!(
        start(l, "k2", "mallory", "t1", 0).await,
        LaunchOutcome::ThreadGone
    );
    assert!(l.delete_thread(&"t1".into(), t(1)).await.unwrap());
    assert!(!l.delete_thread(&"t9".into(), t(1)).await.unwrap());
    assert_eq!(
        start(l, "k3", "alice", "t1", 2).await,
        LaunchOutcome::ThreadGone
    );
    open(l, "alice", "t1", 3).await;
    assert_eq!(
        start(l, "k4", "alice", "t1", 4).await,
        LaunchOutcome::ThreadGone,
        "deletion is final"
    );
    assert!(l.runs().await.unwrap().is_empty(), "nothing was created");
}

/// A run ends once, with a final status; lookups report it.
pub async fn ledger_finish_run_and_status<L: RunLedger>(l: &L) {
    open(l, "alice", "t1", 0).await;
    start(l, "k1", "alice", "t1", 1).await;
    let run = RunId::from("run-1");
    assert_eq!(l.run_status(&run).await.unwrap(), RunStatus::Running);
    assert_eq!(
        l.run_status(&RunId::from("run-9")).await.unwrap(),
        RunStatus::Missing
    );
    assert!(!l.finish_run(&run, RunStatus::Running, t(2)).await.unwrap());
    assert!(!l.finish_run(&run, RunStatus::Missing, t(2)).await.unwrap());
    assert!(!l
        .finish_run(&RunId::from("run-9"), RunStatus::Error, t(2))
        .await
        .unwrap());
    assert!(l
        .finish_run(&run, RunStatus::Interrupted, t(2))
        .await
        .unwrap());
    assert!(!l.finish_run(&run, RunStatus::Success, t(3)).await.unwrap());
    assert_eq!(l.run_status(&run).await.unwrap(), RunStatus::Interrupted);
}
