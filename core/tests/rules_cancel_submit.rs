//! DOMAIN §6 (cancellation and scoping) and §7 (submit with compensation).

mod support;

use support::*;
use tasklatch_core::engine::{ApiError, SubmitError};
use tasklatch_core::identity::Identity;
use tasklatch_core::ids::TaskId;
use tasklatch_core::lease::{LeaseKind, Refusal};
use tasklatch_core::policy::{Policy, CANCEL_BUDGET, MAX_CONTEXT_TASKS, MAX_LIST};
use tasklatch_core::ports::{DriverError, RunStatus};
use tasklatch_core::remote::ErrorClass;
use tasklatch_core::snapshot::{validate, Observed};
use tasklatch_core::status::{CancelStatus, NotifyStatus, RemoteStatus};
use tasklatch_core::store::{
    CancelOutcome, CancelTarget, CancelWrite, ClaimRequest, ListOrder, PollWrite, Store, StoreError,
};
use tasklatch_core::task::TaskRow;
use tasklatch_core::transitions::cancel::CancelAction;
use tasklatch_core::transitions::outbox;
use tasklatch_core::transitions::poll::on_report;
use tasklatch_core::transitions::submit::{self, new_row};

fn policy() -> Policy {
    Policy::default()
}

fn claim_req(worker: &str, now: tasklatch_core::time::Timestamp) -> ClaimRequest {
    ClaimRequest {
        worker: worker.into(),
        now,
        lease_for: secs(60),
        limit: 10,
    }
}

fn working(status: RemoteStatus) -> Observed {
    Observed {
        status,
        result: None,
        result_truncated: false,
        artifact: None,
        error: None,
        input_request: None,
        poll_hint: None,
    }
}

/// A row of `owner`/`thread` named `name`, in `status` after its first report.
fn row_of(task: &str, owner: &str, thread: &str, name: &str, status: RemoteStatus) -> TaskRow {
    let identity = Identity {
        owner: owner.into(),
        thread: thread.into(),
        ..identity(task, name)
    };
    new_row(identity, Some(Ok(working(status))), T0, &policy())
}

async fn store_with(rows: Vec<TaskRow>) -> TestStore {
    let store = TestStore::new(policy());
    for row in rows {
        store.insert_task(row).await.expect("insert");
    }
    store
}

fn by_id(id: &str) -> CancelTarget {
    CancelTarget::Id(id.into())
}

fn by_name(name: &str) -> CancelTarget {
    CancelTarget::Name(name.into())
}

// ------------------------------------------------------------------------------------------
// §6: requests
// ------------------------------------------------------------------------------------------

#[tokio::test]
async fn first_cancel_request_records_intent_and_voids_the_poll_lease() {
    // The void is the poll guard's cancel check: the lease row itself is left alone.
    let store = store_with(vec![row_of(
        "tsk_1",
        OWNER,
        THREAD,
        "build",
        RemoteStatus::Working,
    )])
    .await;
    let id = TaskId::from("tsk_1");
    // working at T0, next poll at T0+30
    let claimed = store
        .claim(LeaseKind::Poll, claim_req("w1", at(30)))
        .await
        .unwrap();
    let c = claimed.into_iter().next().expect("poll claim");
    assert_eq!(c.lease.expires_at, at(90));

    let out = store
        .request_cancel(&scope(), &by_id("tsk_1"), at(40))
        .await
        .unwrap();
    assert_eq!(out, CancelOutcome::Requested(id.clone()));
    let row = store.row(&id).await;
    assert_eq!(row.cancel.requested_at, Some(at(40)));
    assert_eq!(row.cancel.status, CancelStatus::Requested);
    assert_eq!(row.cancel.due_at, Some(at(40)), "cancel work scheduled now");
    assert_eq!(
        row.poll.lease.as_ref().map(|l| l.expires_at),
        Some(at(90)),
        "the lease row is untouched; the cancel check voids it"
    );

    let write = |completed: u64| PollWrite {
        task_id: id.clone(),
        lease: c.lease.clone(),
        completed_at: at(completed),
        update: on_report(
            &c.row,
            validate(&completed_report(), &c.row.identity.handle),
            at(completed),
            &policy(),
        ),
    };
    let before = store.row(&id).await;
    let out = store.apply_polls(vec![write(35)], at(45)).await.unwrap();
    assert_eq!(
        out,
        vec![Err(Refusal::CancelRequested)],
        "completed before the request, still refused: a cancel was requested"
    );
    let out = store.apply_polls(vec![write(41)], at(45)).await.unwrap();
    assert_eq!(
        out,
        vec![Err(Refusal::CancelRequested)],
        "completed after the request, within the lease: refused all the same"
    );
    assert_eq!(
        store.row(&id).await,
        before,
        "no poll result is applied after a cancel"
    );
    assert!(
        store
            .claim(LeaseKind::Poll, claim_req("w2", at(10_000)))
            .await
            .unwrap()
            .is_empty(),
        "a cancelled-requested task is never polled again"
    );
}

fn completed_report() -> tasklatch_core::snapshot::RemoteReport {
    completed("rt-tsk_1", "42")
}

#[tokio::test]
async fn repeated_cancel_requests_change_nothing_and_never_disturb_a_cancel_in_progress() {
    let store = store_with(vec![row_of(
        "tsk_1",
        OWNER,
        THREAD,
        "build",
        RemoteStatus::Working,
    )])
    .await;
    let id = TaskId::from("tsk_1");
    store
        .request_cancel(&scope(), &by_id("tsk_1"), at(1))
        .await
        .unwrap();
    let before = store.row(&id).await;
    assert_eq!(
        store
            .request_cancel(&scope(), &by_id("tsk_1"), at(2))
            .await
            .unwrap(),
        CancelOutcome::AlreadyRequested(id.clone())
    );
    assert_eq!(store.row(&id).await, before);

    let c = store
        .claim(LeaseKind::Cancel, claim_req("w1", at(3)))
        .await
        .unwrap()
        .remove(0);
    let in_progress = store.row(&id).await;
    for (n, target) in [by_id("tsk_1"), by_name("build")].into_iter().enumerate() {
        assert_eq!(
            store
                .request_cancel(&scope(), &target, at(4 + n as u64))
                .await
                .unwrap(),
            CancelOutcome::AlreadyRequested(id.clone())
        );
        assert_eq!(
            store.row(&id).await,
            in_progress,
            "the cancel lease is untouched"
        );
    }
    assert!(
        store
            .claim(LeaseKind::Cancel, claim_req("w2", at(10)))
            .await
            .unwrap()
            .is_empty(),
        "no second concurrent remote cancel"
    );
    let finished = on_report(
        &c.row,
        validate(
            &tasklatch_core::snapshot::RemoteReport {
                ..report("rt-tsk_1", "cancelled")
            },
            &c.row.identity.handle,
        ),
        at(20),
        &policy(),
    );
    let out = store
        .finish_cancels(
            vec![CancelWrite {
                task_id: id.clone(),
                lease: c.lease.clone(),
                action: CancelAction::Finished(Box::new(finished)),
            }],
            at(20),
        )
        .await
        .unwrap();
    assert!(
        out[0].is_ok(),
        "the cancel in progress still owns its lease: {out:?}"
    );
    let row = store.row(&id).await;
    assert_eq!(row.remote.status, RemoteStatus::Cancelled);
    assert_eq!(row.cancel.status, CancelStatus::Done);
    assert_eq!(
        (row.outbox.event_version, row.outbox.status),
        (1, NotifyStatus::Pending)
    );
}

#[tokio::test]
async fn cancel_of_a_terminal_task_is_already_finished_and_changes_nothing() {
    let store = store_with(vec![row_of(
        "tsk_1",
        OWNER,
        THREAD,
        "build",
        RemoteStatus::Completed,
    )])
    .await;
    let id = TaskId::from("tsk_1");
    let before = store.row(&id).await;
    assert_eq!(
        store
            .request_cancel(&scope(), &by_id("tsk_1"), at(5))
            .await
            .unwrap(),
        CancelOutcome::AlreadyFinished(id.clone())
    );
    assert_eq!(store.row(&id).await, before);
    assert_eq!(
        store
            .request_cancel(&scope(), &by_name("build"), at(5))
            .await
            .unwrap(),
        CancelOutcome::NotFound,
        "by name, only active tasks match"
    );
}

#[tokio::test]
async fn cancel_budget_exhaustion_is_a_visible_cancel_dead_letter() {
    let w = World::with_thread().await;
    let e = w.engine("w1");
    let id = w
        .submit(&e, "build", "rt-1", Some(report("rt-1", "working")))
        .await;
    w.driver.on_cancel(
        "rt-1",
        [Err(DriverError::Rejected(
            "-32602: already terminal".into(),
        ))],
    );
    assert_eq!(
        e.cancel(&scope(), &by_id(id.as_str())).await.unwrap(),
        CancelOutcome::Requested(id.clone())
    );
    for _ in 0..(CANCEL_BUDGET + 5) {
        e.run_once().await;
        w.advance(3_600);
    }
    assert_eq!(
        w.driver.cancel_calls("rt-1"),
        CANCEL_BUDGET as usize,
        "the budget is checked before the remote call"
    );
    let row = w.row(&id).await;
    assert_eq!(row.cancel.status, CancelStatus::DeadLetter);
    assert_eq!(row.cancel.failures, CANCEL_BUDGET);
    assert!(row.cancel.last_error.is_some());
    assert_eq!(row.cancel.due_at, None, "not an endless silent loop");
    assert_eq!(w.store.overview().await.unwrap().cancel_dead_letters, 1);
}

#[tokio::test]
async fn a_cancel_result_that_is_terminal_produces_exactly_one_notification() {
    let w = World::with_thread().await;
    w.launcher.finish_every_new_run(Some(RunStatus::Success));
    let e = w.engine("w1");
    let id = w
        .submit(&e, "build", "rt-1", Some(report("rt-1", "working")))
        .await;
    e.cancel(&scope(), &by_id(id.as_str())).await.unwrap();
    for _ in 0..6 {
        e.run_once().await;
        w.advance(120);
    }
    assert_eq!(w.driver.cancel_calls("rt-1"), 1);
    let row = w.row(&id).await;
    assert_eq!(row.remote.status, RemoteStatus::Cancelled);
    assert_eq!(row.outbox.status, NotifyStatus::Delivered);
    assert_eq!(
        (row.outbox.event_version, row.outbox.notified_version),
        (1, 1)
    );
    let starts = w.launcher.starts_for(&id);
    assert_eq!(starts.len(), 1, "{starts:?}");
    assert!(starts[0].0.prompt.contains("\"status\":\"cancelled\""));
    assert_eq!(w.launcher.runs_for(&id).await.len(), 1);
}

#[tokio::test]
async fn a_remote_cancel_that_finds_the_task_finished_applies_that_terminal_state() {
    let w = World::with_thread().await;
    let e = w.engine("w1");
    let id = w
        .submit(&e, "build", "rt-1", Some(report("rt-1", "working")))
        .await;
    w.driver
        .on_cancel("rt-1", [Ok(completed("rt-1", "done first"))]);
    e.cancel(&scope(), &by_id(id.as_str())).await.unwrap();
    e.run_once().await;
    let row = w.row(&id).await;
    assert_eq!(row.remote.status, RemoteStatus::Completed);
    assert_eq!(row.remote.result.as_deref(), Some("done first"));
    assert_eq!(row.cancel.status, CancelStatus::Done);
    assert_eq!(row.outbox.event_version, 1);
}

#[tokio::test]
async fn a_remote_cancel_that_leaves_the_task_running_is_acknowledged_and_polled() {
    let w = World::with_thread().await;
    let e = w.engine("w1");
    let id = w
        .submit(&e, "build", "rt-1", Some(report("rt-1", "working")))
        .await;
    w.driver.on_cancel("rt-1", [Ok(report("rt-1", "working"))]);
    w.driver
        .on_status("rt-1", [Ok(report("rt-1", "cancelled"))]);
    e.cancel(&scope(), &by_id(id.as_str())).await.unwrap();
    e.run_once().await;
    let row = w.row(&id).await;
    assert_eq!(
        (row.cancel.status, row.cancel.failures, row.cancel.due_at),
        (CancelStatus::Done, 0, None),
        "an acknowledgement is not a failure and is not retried"
    );
    assert_eq!(row.remote.status, RemoteStatus::Working);
    let due = row.poll.next_poll_at.expect("polling resumes");
    assert_eq!(due, w.now().plus(policy().poll_interval));
    w.clock.set(due);
    e.run_once().await;
    assert_eq!(w.row(&id).await.remote.status, RemoteStatus::Cancelled);
    assert_eq!(w.driver.cancel_calls("rt-1"), 1);
}

// ------------------------------------------------------------------------------------------
// §6: scoping
// ------------------------------------------------------------------------------------------

async fn scoped_store() -> TestStore {
    store_with(vec![
        row_of("tsk_a1", "alice", "th-1", "build", RemoteStatus::Working),
        row_of("tsk_b1", "bob", "th-1", "build", RemoteStatus::Working),
        row_of("tsk_a2", "alice", "th-2", "build", RemoteStatus::Working),
    ])
    .await
}

#[tokio::test]
async fn cancel_of_another_owners_or_another_threads_task_is_not_found() {
    let store = scoped_store().await;
    let before = store.rows().await;
    for (owner, thread) in [("bob", "th-1"), ("alice", "th-2"), ("mallory", "th-1")] {
        assert_eq!(
            store
                .request_cancel(&scope_of(owner, thread), &by_id("tsk_a1"), at(1))
                .await
                .unwrap(),
            CancelOutcome::NotFound,
            "{owner}/{thread}"
        );
    }
    assert_eq!(
        store
            .request_cancel(&scope(), &by_id("tsk_nope"), at(1))
            .await
            .unwrap(),
        CancelOutcome::NotFound
    );
    assert_eq!(store.rows().await, before, "nothing changed");
}

#[tokio::test]
async fn list_and_detail_are_scoped_to_owner_and_thread() {
    let store = scoped_store().await;
    let ids = |rows: Vec<TaskRow>| rows.iter().map(|r| r.id().to_string()).collect::<Vec<_>>();
    assert_eq!(
        ids(store
            .list_tasks(&scope_of("alice", "th-1"), ListOrder::Newest, MAX_LIST)
            .await
            .unwrap()),
        ["tsk_a1"]
    );
    assert_eq!(
        ids(store
            .list_tasks(&scope_of("bob", "th-1"), ListOrder::Newest, MAX_LIST)
            .await
            .unwrap()),
        ["tsk_b1"]
    );
    assert!(store
        .list_tasks(&scope_of("mallory", "th-1"), ListOrder::Newest, MAX_LIST)
        .await
        .unwrap()
        .is_empty());
    assert!(store
        .list_tasks(&scope_of("bob", "th-2"), ListOrder::Newest, MAX_LIST)
        .await
        .unwrap()
        .is_empty());
    let a1 = TaskId::from("tsk_a1");
    assert!(store
        .get_task(&scope_of("alice", "th-1"), &a1)
        .await
        .unwrap()
        .is_some());
    assert!(store
        .get_task(&scope_of("bob", "th-1"), &a1)
        .await
        .unwrap()
        .is_none());
    assert!(store
        .get_task(&scope_of("alice", "th-2"), &a1)
        .await
        .unwrap()
        .is_none());

    // the same through the engine's public calls
    let w = World::new();
    for row in store.rows().await {
        w.store.insert_task(row).await.unwrap();
    }
    let e = w.engine("w1");
    assert_eq!(
        e.detail(&scope_of("bob", "th-1"), &a1).await,
        Err(ApiError::NotFound)
    );
    assert_eq!(
        e.detail(&scope_of("alice", "th-2"), &a1).await,
        Err(ApiError::NotFound)
    );
    assert!(e.detail(&scope_of("alice", "th-1"), &a1).await.is_ok());
    let listed: Vec<String> = e
        .list(&scope_of("bob", "th-1"))
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.task_id.to_string())
        .collect();
    assert_eq!(listed, ["tsk_b1"]);
    assert_eq!(
        e.cancel(&scope_of("bob", "th-1"), &by_id("tsk_a1")).await,
        Ok(CancelOutcome::NotFound)
    );
    assert!(e
        .context(&scope_of("mallory", "th-1"))
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn the_context_reads_no_more_rows_than_it_shows() {
    let w = World::new();
    for i in 0..(MAX_CONTEXT_TASKS + 5) {
        let id = format!("tsk_{i:02}");
        let row = row_of(&id, "alice", "th-1", "build", RemoteStatus::Working);
        w.store.insert_task(row).await.unwrap();
    }
    let shown = w
        .engine("w1")
        .context(&scope_of("alice", "th-1"))
        .await
        .unwrap();
    assert_eq!(shown.len(), MAX_CONTEXT_TASKS);
    assert_eq!(
        w.store.listings(),
        [(MAX_CONTEXT_TASKS, MAX_CONTEXT_TASKS)],
        "one read of at most what is shown"
    );
}

#[tokio::test]
async fn cancel_by_name_matches_only_the_callers_active_tasks_in_that_thread() {
    let store = store_with(vec![
        row_of("tsk_1", "alice", "th-1", "build", RemoteStatus::Working),
        row_of("tsk_2", "alice", "th-1", "build", RemoteStatus::Completed),
        row_of("tsk_3", "alice", "th-2", "build", RemoteStatus::Working),
        row_of("tsk_4", "bob", "th-1", "build", RemoteStatus::Working),
        row_of("tsk_5", "alice", "th-1", "deploy", RemoteStatus::Working),
        row_of(
            "tsk_6",
            "alice",
            "th-1",
            "deploy",
            RemoteStatus::InputRequired,
        ),
    ])
    .await;
    let before = store.rows().await;
    assert_eq!(
        store
            .request_cancel(&scope(), &by_name("deploy"), at(1))
            .await
            .unwrap(),
        CancelOutcome::Ambiguous(2)
    );
    assert_eq!(
        store.rows().await,
        before,
        "an ambiguous name changes nothing"
    );
    assert_eq!(
        store
            .request_cancel(&scope(), &by_name("nope"), at(1))
            .await
            .unwrap(),
        CancelOutcome::NotFound
    );
    assert_eq!(
        store
            .request_cancel(&scope_of("carol", "th-1"), &by_name("build"), at(1))
            .await
            .unwrap(),
        CancelOutcome::NotFound
    );
    assert_eq!(
        store
            .request_cancel(&scope(), &by_name("build"), at(2))
            .await
            .unwrap(),
        CancelOutcome::Requested("tsk_1".into()),
        "the terminal twin, the other thread's and bob's tasks do not count"
    );
    let after = store.rows().await;
    for (b, a) in before.iter().zip(&after) {
        if a.id().as_str() != "tsk_1" {
            assert_eq!(a, b, "{} untouched", a.id());
        }
    }
}

// ------------------------------------------------------------------------------------------
// §7: submit
// ------------------------------------------------------------------------------------------

fn down() -> StoreError {
    StoreError::Unavailable("down".into())
}

#[tokio::test]
async fn the_intent_is_stored_before_the_remote_call() {
    let w = World::new();
    let e = w.engine("w1");
    w.store.set_insert_fault(InsertFault::Fail(down()));
    w.driver.on_submit("rt-1", None);
    let err = e.submit(&w.ids, w.command("build")).await.unwrap_err();
    assert!(matches!(err, SubmitError::NotStarted(_)), "{err:?}");
    assert!(
        err.to_string().contains("not started"),
        "the caller may submit again: {err}"
    );
    assert!(w.driver.calls().is_empty(), "nothing remote was started");
    assert_eq!(e.pending_submits(), 1, "the intent's withdrawal is owed");
    w.store.set_insert_fault(InsertFault::None);
    e.run_once().await;
    assert_eq!(e.pending_submits(), 0);
    assert!(w.store.rows().await.is_empty());
}

#[tokio::test]
async fn an_intent_that_committed_but_answered_unavailable_goes_on_to_the_remote_call() {
    let w = World::new();
    let e = w.engine("w1");
    w.store
        .set_insert_fault(InsertFault::CommitThenFailOnce(down()));
    let id = w
        .submit(&e, "build", "rt-1", Some(report("rt-1", "working")))
        .await;
    let row = w.row(&id).await;
    assert_eq!(row.identity.handle.remote_task_id.expose(), "rt-1");
    assert_eq!(row.remote.status, RemoteStatus::Working);
    assert_eq!(e.pending_submits(), 0);
}

#[tokio::test]
async fn a_refused_handle_cancels_the_remote_task_and_keeps_the_original_error() {
    let w = World::new();
    let e = w.engine("w1");
    let refused = StoreError::Invalid("row refused".into());
    w.store.set_handle_fault(InsertFault::Fail(refused.clone()));
    w.driver.on_submit("rt-1", None);
    let err = e.submit(&w.ids, w.command("build")).await.unwrap_err();
    assert_eq!(
        err,
        SubmitError::Store(refused.clone()),
        "the original error is kept"
    );
    assert_eq!(w.driver.cancel_calls("rt-1"), 1, "compensated at once");
    assert_eq!(e.pending_submits(), 0);
    assert!(w.store.rows().await.is_empty(), "the intent was withdrawn");

    // a compensating cancel that fails is queued and retried by the next pass
    w.driver.on_submit("rt-2", None);
    w.driver.on_cancel(
        "rt-2",
        [
            Err(unavailable(ErrorClass::Timeout, "slow")),
            Ok(report("rt-2", "cancelled")),
        ],
    );
    let err = e.submit(&w.ids, w.command("build")).await.unwrap_err();
    assert_eq!(err, SubmitError::Store(refused));
    assert_eq!(e.pending_submits(), 1);
    let pass = e.run_once().await;
    assert_eq!(pass.submits.cancelled, 1);
    assert_eq!(w.driver.cancel_calls("rt-2"), 2);
    assert_eq!(e.pending_submits(), 0);
}

#[tokio::test]
async fn a_handle_write_that_committed_but_answered_unavailable_is_kept_and_never_cancelled() {
    let w = World::new();
    let e = w.engine("w1");
    w.store
        .set_handle_fault(InsertFault::CommitThenFailOnce(down()));
    let id = w
        .submit(&e, "build", "rt-1", Some(report("rt-1", "working")))
        .await;
    assert_eq!(w.driver.cancel_calls("rt-1"), 0, "no compensation");
    assert_eq!(e.pending_submits(), 0);
    let rows = w.store.rows().await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].id(), &id, "the user got the id of the stored task");
    assert_eq!(rows[0].identity.handle.remote_task_id.expose(), "rt-1");
}

/// DOMAIN §7: an acknowledged submit is never forgotten, however long the store is away.
/// (Before the intent row, the worker gave the handle up after 3 passes: the planted
/// `owed-handle-given-up` restores that and fails this test.)
#[tokio::test]
async fn an_acknowledged_submit_outlives_a_long_store_outage_and_its_end_is_delivered() {
    let w = World::with_thread().await;
    let e = w.engine("w1");
    w.launcher.finish_every_new_run(Some(RunStatus::Success));
    w.store.set_handle_fault(InsertFault::Fail(down()));
    w.driver.on_submit("rt-1", Some(report("rt-1", "working")));
    let err = e.submit(&w.ids, w.command("build")).await.unwrap_err();
    assert_eq!(err, SubmitError::Unconfirmed(down()));
    assert!(
        err.to_string().contains("do not submit it again"),
        "the caller is told not to resubmit: {err}"
    );
    // Eight passes over two minutes of outage: the handle stays owed, nothing is cancelled.
    for _ in 0..8 {
        w.advance(15);
        let pass = e.run_once().await;
        assert_eq!(pass.submits.still_owed, 1);
    }
    assert_eq!(w.driver.cancel_calls("rt-1"), 0);
    let rows = w.store.rows().await;
    assert_eq!(rows.len(), 1, "the intent is there");
    assert!(rows[0].identity.handle.is_unrecorded());
    // Back: the handle is recorded, the task is polled and its end delivered, once.
    w.store.set_handle_fault(InsertFault::None);
    w.advance(30);
    assert_eq!(e.run_once().await.submits.recorded, 1);
    assert_eq!(e.pending_submits(), 0);
    let id = rows[0].id().clone();
    assert_eq!(
        w.row(&id).await.identity.handle.remote_task_id.expose(),
        "rt-1"
    );
    w.driver
        .on_status("rt-1", [Ok(completed("rt-1", "all green"))]);
    for _ in 0..4 {
        w.advance(31);
        e.run_once().await;
    }
    let starts = w.launcher.starts_for(&id);
    assert_eq!(starts.len(), 1, "the end is delivered once");
    assert!(starts[0].0.prompt.contains("all green"));
    assert_eq!(w.row(&id).await.outbox.status, NotifyStatus::Delivered);
}

/// DOMAIN §7: a worker that dies with a handle unsaved leaves an intent whose grace runs out;
/// another worker ends it as untracked and the thread is told exactly that, once.
#[tokio::test]
async fn a_worker_restarted_while_a_handle_is_pending_tells_the_thread_once() {
    let w = World::with_thread().await;
    w.launcher.finish_every_new_run(Some(RunStatus::Success));
    let e1 = w.engine("w1");
    w.store.set_handle_fault(InsertFault::Fail(down()));
    w.driver.on_submit("rt-1", None);
    let err = e1.submit(&w.ids, w.command("build")).await.unwrap_err();
    assert!(matches!(err, SubmitError::Unconfirmed(_)));
    drop(e1); // the worker dies: what it owed is gone
    w.store.set_handle_fault(InsertFault::None);
    let e2 = w.engine("w2");
    let id = w.store.rows().await[0].id().clone();
    // Within the grace the intent is left alone: its submitter may still save the handle.
    w.advance(policy().submit_grace.as_secs() - 5);
    e2.run_once().await;
    assert!(w.launcher.starts_for(&id).is_empty());
    assert_eq!(w.row(&id).await.remote.status, RemoteStatus::Submitted);
    for _ in 0..6 {
        w.advance(31);
        e2.run_once().await;
    }
    let row = w.row(&id).await;
    assert_eq!(row.remote.status, RemoteStatus::Failed);
    assert_eq!(row.remote.error.as_deref(), Some(submit::UNTRACKED));
    let starts = w.launcher.starts_for(&id);
    assert_eq!(starts.len(), 1, "told once");
    assert!(
        starts[0].0.prompt.contains("could not be tracked"),
        "{}",
        starts[0].0.prompt
    );
    assert_eq!(row.outbox.status, NotifyStatus::Delivered);
    assert!(
        w.driver
            .calls()
            .iter()
            .all(|c| !matches!(c, DriverCall::GetStatus(_) | DriverCall::Cancel(_))),
        "no remote call is made for a task without a handle"
    );
}

/// DOMAIN §7: a handle the store refuses for good after the caller was told "do not submit it
/// again" is not silence: the remote task is cancelled, and the kept intent ends as untracked
/// once its grace is over, which tells the thread, once.
#[tokio::test]
async fn a_handle_refused_after_the_submit_was_acknowledged_tells_the_thread() {
    let w = World::with_thread().await;
    w.launcher.finish_every_new_run(Some(RunStatus::Success));
    let e = w.engine("w1");
    w.store.set_handle_fault(InsertFault::Fail(down()));
    w.driver.on_submit("rt-1", None);
    let err = e.submit(&w.ids, w.command("build")).await.unwrap_err();
    assert!(matches!(err, SubmitError::Unconfirmed(_)));
    let refused = StoreError::Invalid("row refused".into());
    w.store.set_handle_fault(InsertFault::Fail(refused));
    w.advance(2);
    e.run_once().await;
    w.advance(2);
    e.run_once().await;
    assert_eq!(
        w.driver.cancel_calls("rt-1"),
        1,
        "the remote task is cancelled"
    );
    let id = w.store.rows().await[0].id().clone();
    w.advance(policy().submit_grace.as_secs());
    for _ in 0..6 {
        w.advance(31);
        e.run_once().await;
    }
    let row = w.row(&id).await;
    assert_eq!(row.remote.error.as_deref(), Some(submit::UNTRACKED));
    let starts = w.launcher.starts_for(&id);
    assert_eq!(starts.len(), 1, "told once");
    assert!(starts[0].0.prompt.contains("could not be tracked"));
}

/// A handle owed after an outage that turns out to be tracked by another row (a server that
/// hands one remote task to two submits) is not cancelled: that row tracks it; the intent goes.
#[tokio::test]
async fn an_owed_handle_already_tracked_elsewhere_is_withdrawn_not_cancelled() {
    let w = World::with_thread().await;
    let e = w.engine("w1");
    w.store.set_handle_fault(InsertFault::Fail(down()));
    w.driver.on_submit("rt-1", None);
    let err = e.submit(&w.ids, w.command("build")).await.unwrap_err();
    assert!(matches!(err, SubmitError::Unconfirmed(_)));
    w.store
        .set_handle_fault(InsertFault::Fail(StoreError::DuplicateHandle));
    for _ in 0..3 {
        w.advance(2);
        e.run_once().await;
    }
    w.store.set_handle_fault(InsertFault::None);
    w.advance(2);
    e.run_once().await;
    assert_eq!(w.driver.cancel_calls("rt-1"), 0, "another row tracks it");
    assert_eq!(e.pending_submits(), 0);
    assert!(w.store.rows().await.is_empty(), "the intent was withdrawn");
}

#[tokio::test]
async fn a_handle_saved_after_the_intent_ended_as_untracked_has_its_remote_task_cancelled() {
    let w = World::with_thread().await;
    let e1 = w.engine("w1");
    w.store.set_handle_fault(InsertFault::Fail(down()));
    w.driver.on_submit("rt-1", None);
    e1.submit(&w.ids, w.command("build")).await.unwrap_err();
    // Another worker ends the intent once its grace is over, while w1 cannot reach the store.
    let e2 = w.engine("w2");
    w.advance(policy().submit_grace.as_secs() + 1);
    e2.run_once().await;
    let id = w.store.rows().await[0].id().clone();
    assert_eq!(w.row(&id).await.remote.status, RemoteStatus::Failed);
    w.store.set_handle_fault(InsertFault::None);
    w.advance(60);
    e1.run_once().await;
    w.advance(60);
    e1.run_once().await;
    assert_eq!(
        w.driver.cancel_calls("rt-1"),
        1,
        "nobody tracks it: cancelled"
    );
    assert_eq!(e1.pending_submits(), 0);
    let row = w.row(&id).await;
    assert_eq!(
        row.remote.status,
        RemoteStatus::Failed,
        "the told ending stands"
    );
    assert!(row.identity.handle.is_unrecorded());
}

#[tokio::test]
async fn a_cancel_requested_before_the_handle_is_sent_once_the_handle_is_saved() {
    let w = World::new();
    let e = w.engine("w1");
    w.store.set_handle_fault(InsertFault::Fail(down()));
    w.driver.on_submit("rt-1", Some(report("rt-1", "working")));
    e.submit(&w.ids, w.command("build")).await.unwrap_err();
    let id = w.store.rows().await[0].id().clone();
    let outcome = w
        .store
        .request_cancel(&scope(), &CancelTarget::Id(id.clone()), w.now())
        .await
        .unwrap();
    assert_eq!(outcome, CancelOutcome::Requested(id.clone()));
    w.advance(1);
    e.run_once().await;
    assert_eq!(w.driver.cancel_calls("rt-1"), 0, "no handle yet");
    w.store.set_handle_fault(InsertFault::None);
    w.driver
        .on_cancel("rt-1", [Ok(report("rt-1", "cancelled"))]);
    w.advance(30);
    e.run_once().await;
    assert_eq!(
        w.driver.cancel_calls("rt-1"),
        1,
        "sent with the saved handle"
    );
}

#[tokio::test]
async fn a_blank_remote_task_id_is_refused_and_nothing_is_stored() {
    for blank in ["", "  "] {
        let w = World::new();
        let e = w.engine("w1");
        w.driver.on_submit(blank, None);
        let err = e.submit(&w.ids, w.command("build")).await.unwrap_err();
        assert_eq!(
            err,
            SubmitError::Remote("the remote server answered with a blank task id".into()),
            "{blank:?}"
        );
        assert!(w.store.rows().await.is_empty());
        assert_eq!(e.pending_submits(), 0);
    }
}

#[tokio::test]
async fn a_duplicate_remote_handle_is_rejected_without_cancelling_the_existing_task() {
    let w = World::new();
    let e = w.engine("w1");
    let first = w
        .submit(&e, "build", "rt-1", Some(report("rt-1", "working")))
        .await;
    let before = w.row(&first).await;
    w.driver.on_submit("rt-1", None);
    assert_eq!(
        e.submit(&w.ids, w.command("build again")).await,
        Err(SubmitError::Duplicate)
    );
    assert_eq!(e.pending_submits(), 0);
    let pass = e.run_once().await;
    assert_eq!(pass.submits.cancelled, 0);
    assert_eq!(
        w.driver.cancel_calls("rt-1"),
        0,
        "the existing remote task is untouched"
    );
    assert_eq!(
        w.store.rows().await.len(),
        1,
        "the second intent was withdrawn"
    );
    assert_eq!(w.row(&first).await.identity, before.identity);
    assert_eq!(w.row(&first).await.cancel.requested_at, None);
}

#[tokio::test]
async fn a_submit_dropped_while_saving_its_handle_saves_it_at_the_next_pass_not_cancelled() {
    let w = World::new();
    let e = w.engine("w1");
    w.store.set_handle_fault(InsertFault::Hang);
    w.driver.on_submit("rt-1", None);
    assert!(
        poll_once(e.submit(&w.ids, w.command("build"))).is_none(),
        "the handle write never completes; the future is dropped midway"
    );
    assert_eq!(e.pending_submits(), 1);
    w.store.set_handle_fault(InsertFault::None);
    let pass = e.run_once().await;
    assert_eq!(pass.submits.recorded, 1);
    assert_eq!(w.driver.cancel_calls("rt-1"), 0);
    assert_eq!(e.pending_submits(), 0);
    let rows = w.store.rows().await;
    assert_eq!(rows[0].identity.handle.remote_task_id.expose(), "rt-1");
}

#[tokio::test]
async fn a_submit_dropped_before_its_remote_call_withdraws_its_intent() {
    let w = World::new();
    let e = w.engine("w1");
    w.store.set_insert_fault(InsertFault::Hang);
    w.driver.on_submit("rt-1", None);
    assert!(poll_once(e.submit(&w.ids, w.command("build"))).is_none());
    assert_eq!(
        e.pending_submits(),
        1,
        "the intent may exist: its withdrawal is owed"
    );
    w.store.set_insert_fault(InsertFault::None);
    assert_eq!(e.run_once().await.submits.still_owed, 0);
    assert!(w.store.rows().await.is_empty());
    assert!(w.driver.calls().is_empty());
}

#[tokio::test]
async fn a_submit_dropped_during_its_compensating_cancel_is_still_compensated() {
    let w = World::new();
    let e = w.engine("w1");
    w.store
        .set_handle_fault(InsertFault::Fail(StoreError::Invalid("refused".into())));
    w.driver.on_submit("rt-1", None);
    let _stuck = w.driver.gate(CallKind::Cancel, "rt-1");
    assert!(
        poll_once(e.submit(&w.ids, w.command("build"))).is_none(),
        "the compensating cancel hangs; the future is dropped there"
    );
    assert_eq!(w.driver.cancel_calls("rt-1"), 1);
    assert!(
        e.pending_submits() >= 1,
        "the compensation must not be lost"
    );
    assert_eq!(e.run_once().await.submits.cancelled, 1);
    assert_eq!(w.driver.cancel_calls("rt-1"), 2);
}

#[tokio::test]
async fn terminal_or_input_required_at_submit_is_version_1_pending_at_once() {
    for status in ["completed", "failed", "cancelled", "input_required"] {
        let w = World::with_thread().await;
        let e = w.engine("w1");
        w.advance(7);
        let id = w
            .submit(&e, "build", "rt-1", Some(report("rt-1", status)))
            .await;
        let row = w.row(&id).await;
        assert_eq!(row.outbox.event_version, 1, "{status}");
        assert_eq!(row.outbox.notified_version, 0, "{status}");
        assert_eq!(row.outbox.status, NotifyStatus::Pending, "{status}");
        assert_eq!(row.outbox.due_at, w.now(), "{status}: due at once");
        assert!(outbox::claimable(&row.outbox, w.now()), "{status}");
        e.run_once().await;
        assert_eq!(
            w.launcher.starts_for(&id).len(),
            1,
            "{status}: launched in the first pass"
        );
        if status != "input_required" {
            assert_eq!(
                w.driver.status_calls("rt-1"),
                0,
                "{status}: terminal, never polled"
            );
        }
    }
    for first in [None, Some(report("rt-1", "working"))] {
        let w = World::new();
        let e = w.engine("w1");
        let id = w.submit(&e, "build", "rt-1", first.clone()).await;
        let row = w.row(&id).await;
        assert_eq!(
            (row.outbox.event_version, row.outbox.status),
            (0, NotifyStatus::None),
            "{first:?}: nothing to say"
        );
    }
}

#[tokio::test]
async fn a_remote_submit_error_stores_nothing_and_needs_no_compensation() {
    let w = World::new();
    let e = w.engine("w1");
    w.driver
        .on_submit_error(DriverError::Rejected("quota".into()));
    assert!(matches!(
        e.submit(&w.ids, w.command("build")).await,
        Err(SubmitError::Remote(_))
    ));
    assert!(w.store.rows().await.is_empty());
    assert_eq!(e.pending_submits(), 0);
}
