//! A cancel never leaves its task unwatched (DOMAIN §6, issue 11 item 1), end to end through
//! `Engine::run_once` with a scripted server: a cancel the server only acknowledges, and a
//! cancel a legacy server rejects ("already terminal", -32602) until the budget is spent. In
//! both the task is polled again and its real end is delivered. Both fail on the code before
//! the fix: the acknowledgement counted as a failure, the dead letter stopped polling for good.

mod support;

use support::*;
use tasklatch_core::policy::CANCEL_BUDGET;
use tasklatch_core::ports::{DriverError, RunStatus};
use tasklatch_core::status::{CancelStatus, NotifyStatus, RemoteStatus};
use tasklatch_core::store::{CancelOutcome, CancelTarget};

/// The status the delivered notifications said, in order.
fn delivered_statuses(w: &World, id: &tasklatch_core::ids::TaskId) -> Vec<String> {
    w.launcher
        .starts_for(id)
        .iter()
        .filter_map(|(r, _)| {
            let start = r.prompt.find('{')?;
            let end = r.prompt.rfind('}')?;
            let e: serde_json::Value = serde_json::from_str(&r.prompt[start..=end]).ok()?;
            e["status"].as_str().map(str::to_owned)
        })
        .collect()
}

async fn passes(w: &World, e: &TestEngine, n: usize, secs: u64) {
    for _ in 0..n {
        w.advance(secs);
        e.run_once().await;
    }
}

#[tokio::test]
async fn an_acknowledged_cancel_is_done_and_the_task_is_polled_until_its_end_is_delivered() {
    let w = World::with_thread().await;
    w.launcher.finish_every_new_run(Some(RunStatus::Success));
    let e = w.engine("w1");
    let id = w
        .submit(&e, "build", "rt-1", Some(report("rt-1", "working")))
        .await;
    // The tasks extension: the cancel answer is a non-terminal report; the task ends later.
    w.driver.on_cancel("rt-1", [Ok(report("rt-1", "working"))]);
    w.driver
        .on_status("rt-1", [Ok(report("rt-1", "cancelled"))]);
    assert_eq!(
        e.cancel(&scope(), &CancelTarget::Id(id.clone())).await,
        Ok(CancelOutcome::Requested(id.clone()))
    );
    passes(&w, &e, 6, 20).await;
    assert_eq!(
        w.driver.cancel_calls("rt-1"),
        1,
        "an acknowledgement is not retried"
    );
    assert!(w.driver.status_calls("rt-1") >= 1, "polling resumed");
    let row = w.row(&id).await;
    assert_eq!(
        (row.remote.status, row.cancel.status, row.cancel.failures),
        (RemoteStatus::Cancelled, CancelStatus::Done, 0)
    );
    assert_eq!(row.outbox.status, NotifyStatus::Delivered);
    assert_eq!(delivered_statuses(&w, &id), ["cancelled"]);
}

#[tokio::test]
async fn a_dead_lettered_cancel_still_polls_and_delivers_the_end() {
    let w = World::with_thread().await;
    w.launcher.finish_every_new_run(Some(RunStatus::Success));
    let e = w.engine("w1");
    let id = w
        .submit(&e, "build", "rt-1", Some(report("rt-1", "working")))
        .await;
    // A legacy server: the task already ended remotely; every cancel is an error.
    let already = || {
        Err(DriverError::Rejected(
            "-32602: task already terminal".into(),
        ))
    };
    w.driver.on_cancel("rt-1", [already()]);
    w.driver
        .on_status("rt-1", [Ok(completed("rt-1", "finished first"))]);
    assert_eq!(
        e.cancel(&scope(), &CancelTarget::Id(id.clone())).await,
        Ok(CancelOutcome::Requested(id.clone()))
    );
    passes(&w, &e, 30, 20).await;
    assert_eq!(w.driver.cancel_calls("rt-1"), CANCEL_BUDGET as usize);
    let row = w.row(&id).await;
    assert_eq!(
        row.cancel.status,
        CancelStatus::DeadLetter,
        "the spent budget stays visible"
    );
    assert_eq!(
        row.remote.status,
        RemoteStatus::Completed,
        "its real end was learned"
    );
    assert_eq!(row.outbox.status, NotifyStatus::Delivered);
    assert_eq!(delivered_statuses(&w, &id), ["completed"]);
}
