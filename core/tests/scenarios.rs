//! End-to-end scenarios through `Engine::run_once` with scripted doubles: a scripted remote
//! server, a manual clock and the real run ledger behind a recording launcher. Each scenario
//! asserts from what the doubles recorded (remote calls, launches, runs).

mod support;

use support::*;
use tasklatch_core::ids::{RunId, TaskId};
use tasklatch_core::ledger::RunLedger;
use tasklatch_core::policy::{Policy, FAILURE_BUDGET};
use tasklatch_core::ports::{LaunchOutcome, RunRequest, RunStatus};
use tasklatch_core::remote::ErrorClass;
use tasklatch_core::status::{CancelStatus, DeadLetterReason, NotifyStatus, RemoteStatus};
use tasklatch_core::store::{CancelOutcome, CancelTarget};
use tokio::sync::Notify;

fn run(n: u32) -> RunId {
    RunId(format!("run-{n}"))
}

fn key(id: &TaskId, version: u64, attempt: u32) -> String {
    format!("task:{id}:{version}:{attempt}")
}

fn keys(starts: &[(RunRequest, LaunchOutcome)]) -> Vec<String> {
    starts.iter().map(|(r, _)| r.key.clone()).collect()
}

/// The event JSON inside a notification prompt.
fn event_json(prompt: &str) -> serde_json::Value {
    let start = prompt.find('{').expect("an event in the prompt");
    let end = prompt.rfind('}').expect("an event in the prompt");
    serde_json::from_str(&prompt[start..=end]).expect("the framed event is JSON")
}

fn says_something(prompt: &str) -> bool {
    let e = event_json(prompt);
    e["tracking_degraded"] == serde_json::Value::Bool(true)
        || matches!(
            e["status"].as_str(),
            Some("input_required" | "completed" | "failed" | "cancelled")
        )
}

/// `n` passes, each after advancing the clock by `secs`.
async fn passes(w: &World, e: &TestEngine, n: usize, secs: u64) {
    for _ in 0..n {
        w.advance(secs);
        e.run_once().await;
    }
}

fn by_id(id: &TaskId) -> CancelTarget {
    CancelTarget::Id(id.clone())
}

// ------------------------------------------------------------------------------------------
// (a)–(g)
// ------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_submit_working_completed_delivers_exactly_one_run() {
    let w = World::with_thread().await;
    let e = w.engine("w1");
    let id = w.submit(&e, "build", "rt-1", None).await;
    w.driver.on_status(
        "rt-1",
        [Ok(report("rt-1", "working")), Ok(completed("rt-1", "42"))],
    );

    e.run_once().await;
    assert_eq!(w.row(&id).await.remote.status, RemoteStatus::Working);
    assert!(w.launcher.starts().is_empty(), "working: nothing to say");

    w.advance(30);
    e.run_once().await;
    let starts = w.launcher.starts_for(&id);
    assert_eq!(keys(&starts), [key(&id, 1, 0)]);
    assert_eq!(starts[0].1, LaunchOutcome::Started(run(1)));
    assert!(starts[0].0.prompt.contains("\"status\":\"completed\""));
    assert_eq!(starts[0].0.thread.as_str(), THREAD);

    w.launcher.finish(&run(1), RunStatus::Success).await;
    passes(&w, &e, 6, 600).await;

    let runs = w.launcher.runs().await;
    assert_eq!(runs.len(), 1, "exactly one run");
    assert_eq!(
        (runs[0].key.clone(), runs[0].status),
        (key(&id, 1, 0), RunStatus::Success)
    );
    assert_eq!(w.launcher.starts().len(), 1, "one launch, one key");
    assert_eq!(
        w.driver.status_calls("rt-1"),
        2,
        "terminal: never polled again"
    );
    let row = w.row(&id).await;
    assert_eq!(row.outbox.status, NotifyStatus::Delivered);
    assert_eq!(
        (row.outbox.event_version, row.outbox.notified_version),
        (1, 1)
    );
}

#[tokio::test]
async fn b_an_engine_dropped_after_launching_is_replaced_and_the_same_key_gets_the_same_run() {
    let w = World::with_thread().await;
    let a = w.engine("w-a");
    let id = w
        .submit(&a, "build", "rt-1", Some(completed("rt-1", "42")))
        .await;

    w.launcher.hang_next_start();
    tokio::select! {
        biased;
        _ = a.run_once() => panic!("the launch was supposed to hang"),
        _ = w.launcher.hung() => {}
    }
    // engine A's pass is gone: the run exists, the row never heard of it
    let row = w.row(&id).await;
    assert_eq!(row.outbox.status, NotifyStatus::Claimed);
    assert_eq!(
        row.outbox.lease.as_ref().map(|l| l.owner.as_str()),
        Some("w-a")
    );
    assert_eq!(w.launcher.runs().await.len(), 1);

    let b = w.engine("w-b");
    b.run_once().await;
    assert_eq!(w.launcher.starts().len(), 1, "A's lease still holds");

    w.advance(61);
    b.run_once().await;
    let starts = w.launcher.starts_for(&id);
    assert_eq!(
        keys(&starts),
        [key(&id, 1, 0), key(&id, 1, 0)],
        "the same key again"
    );
    assert_eq!(
        starts[1].1,
        LaunchOutcome::Started(run(1)),
        "and the same run"
    );
    assert_eq!(w.launcher.runs().await.len(), 1, "never a second run");
    let row = w.row(&id).await;
    assert_eq!(
        (row.outbox.status, row.outbox.run_id.clone()),
        (NotifyStatus::Dispatched, Some(run(1)))
    );

    w.launcher.finish(&run(1), RunStatus::Success).await;
    passes(&w, &b, 2, 11).await;
    assert_eq!(w.row(&id).await.outbox.status, NotifyStatus::Delivered);
    let runs = w.launcher.runs().await;
    assert_eq!(
        runs.iter()
            .filter(|r| r.status == RunStatus::Success)
            .count(),
        1
    );
}

#[tokio::test]
async fn c_a_busy_thread_then_success_delivers_the_latest_state_not_the_stale_one() {
    // a notification lease longer than the input_required poll floor, so a poll by another
    // worker lands while the launch of version 1 is in flight
    let w = World::with_policy(Policy {
        notify_lease: secs(120),
        ..Policy::default()
    });
    w.launcher.create_thread(OWNER, THREAD).await;
    let a = w.engine("w-a");
    let b = w.engine("w-b");
    let id = w
        .submit(
            &a,
            "build",
            "rt-1",
            Some(tasklatch_core::snapshot::RemoteReport {
                input_request: Some("which branch?".into()),
                ..report("rt-1", "input_required")
            }),
        )
        .await;
    // another run keeps the thread busy
    let blocker = w
        .launcher
        .ledger()
        .start_run(
            &RunRequest {
                key: "other:1".into(),
                owner: OWNER.into(),
                thread: THREAD.into(),
                prompt: "p".into(),
            },
            w.now(),
        )
        .await
        .unwrap();
    assert_eq!(blocker, LaunchOutcome::Started(run(1)));
    w.driver
        .on_status("rt-1", [Ok(completed("rt-1", "main it is"))]);

    let gate = w.launcher.gate_next_start();
    let (pass_a, ()) = tokio::join!(a.run_once(), async {
        gate.entered().await;
        w.advance(60);
        let pass_b = b.run_once().await;
        assert_eq!(
            pass_b.poll.applied, 1,
            "version 2 is recorded while version 1 launches"
        );
        assert_eq!(pass_b.notify.claimed, 0);
        gate.open();
    });
    assert_eq!(pass_a.notify.applied, 1);
    let starts = w.launcher.starts_for(&id);
    assert_eq!(starts.len(), 1);
    assert_eq!(
        (starts[0].0.key.clone(), starts[0].1.clone()),
        (key(&id, 1, 0), LaunchOutcome::Busy)
    );
    let row = w.row(&id).await;
    assert_eq!(
        (
            row.outbox.status,
            row.outbox.busy_count,
            row.outbox.failures
        ),
        (NotifyStatus::Pending, 1, 0)
    );
    assert_eq!(row.outbox.event_version, 2);

    w.launcher.finish(&run(1), RunStatus::Success).await;
    w.advance(10);
    a.run_once().await;
    let starts = w.launcher.starts_for(&id);
    assert_eq!(keys(&starts), [key(&id, 1, 0), key(&id, 2, 0)]);
    let prompt = &starts[1].0.prompt;
    assert_eq!(
        event_json(prompt)["status"],
        "completed",
        "the latest state"
    );
    assert!(prompt.contains("main it is") && !prompt.contains("which branch?"));
    assert_eq!(starts[1].1, LaunchOutcome::Started(run(2)));

    w.launcher.finish(&run(2), RunStatus::Success).await;
    passes(&w, &a, 2, 11).await;
    let row = w.row(&id).await;
    assert_eq!(
        (row.outbox.status, row.outbox.notified_version),
        (NotifyStatus::Delivered, 2)
    );
    assert_eq!(row.outbox.failures, 0, "a 409 is never a failure");
    assert_eq!(
        w.launcher.runs_for(&id).await.len(),
        1,
        "the stale state was never run"
    );
}

#[tokio::test]
async fn d_a_missing_thread_dead_letters_at_once_and_a_later_event_revives_the_channel() {
    let w = World::new();
    let e = w.engine("w1");
    let question = tasklatch_core::snapshot::RemoteReport {
        input_request: Some("which branch?".into()),
        ..report("rt-1", "input_required")
    };
    let id = w.submit(&e, "build", "rt-1", Some(question.clone())).await;
    w.driver.on_status("rt-1", [Ok(question)]);

    e.run_once().await;
    let row = w.row(&id).await;
    assert_eq!(row.outbox.status, NotifyStatus::DeadLetter);
    assert_eq!(
        row.outbox.dead_letter,
        Some((1, DeadLetterReason::ThreadGone))
    );
    assert_eq!(row.outbox.failures, 0);
    passes(&w, &e, 4, 60).await;
    assert_eq!(w.launcher.starts_for(&id).len(), 1, "no retry of a 404");
    assert!(w.driver.status_calls("rt-1") >= 3, "polling went on");

    w.launcher.create_thread(OWNER, THREAD).await;
    w.launcher.finish_every_new_run(Some(RunStatus::Success));
    w.driver.set_status("rt-1", [Ok(completed("rt-1", "done"))]);
    passes(&w, &e, 3, 60).await;
    let starts = w.launcher.starts_for(&id);
    assert_eq!(keys(&starts), [key(&id, 1, 0), key(&id, 2, 0)]);
    assert_eq!(starts[1].1, LaunchOutcome::Started(run(1)));
    let row = w.row(&id).await;
    assert_eq!(
        (row.outbox.status, row.outbox.notified_version),
        (NotifyStatus::Delivered, 2)
    );
}

/// Task `rt-1`, asking "which branch?" at every poll, submitted through `e`; every run from
/// now on ends `error`.
async fn asking_task_whose_runs_fail(w: &World, e: &TestEngine) -> TaskId {
    let question = tasklatch_core::snapshot::RemoteReport {
        input_request: Some("which branch?".into()),
        ..report("rt-1", "input_required")
    };
    let id = w.submit(e, "build", "rt-1", Some(question.clone())).await;
    w.driver.on_status("rt-1", [Ok(question)]);
    w.launcher.finish_every_new_run(Some(RunStatus::Error));
    id
}

#[tokio::test]
async fn e_five_failed_runs_dead_letter_one_version_and_a_newer_event_still_delivers() {
    let w = World::with_thread().await;
    let e = w.engine("w1");
    let id = asking_task_whose_runs_fail(&w, &e).await;

    passes(&w, &e, 16, 100).await;
    let runs = w.launcher.runs_for(&id).await;
    let expected: Vec<String> = (0..FAILURE_BUDGET).map(|a| key(&id, 1, a)).collect();
    assert_eq!(
        runs.iter().map(|r| r.key.clone()).collect::<Vec<_>>(),
        expected
    );
    assert!(runs.iter().all(|r| r.status == RunStatus::Error));
    assert_eq!(
        w.launcher.starts_for(&id).len(),
        FAILURE_BUDGET as usize,
        "no sixth launch"
    );
    let row = w.row(&id).await;
    assert_eq!(row.outbox.status, NotifyStatus::DeadLetter);
    assert_eq!(row.outbox.dead_letter, Some((1, DeadLetterReason::Budget)));
    assert_eq!(row.outbox.notified_version, 1);

    w.launcher.finish_every_new_run(Some(RunStatus::Success));
    w.driver.set_status("rt-1", [Ok(completed("rt-1", "done"))]);
    passes(&w, &e, 3, 100).await;
    let runs = w.launcher.runs_for(&id).await;
    assert_eq!(runs.len(), FAILURE_BUDGET as usize + 1);
    let last = runs.last().expect("a run for v2");
    assert_eq!(
        (last.key.clone(), last.status),
        (key(&id, 2, 0), RunStatus::Success)
    );
    let row = w.row(&id).await;
    assert_eq!(
        (row.outbox.status, row.outbox.notified_version),
        (NotifyStatus::Delivered, 2)
    );
}

/// Five failed runs of task `rt-1`'s question, then another task's run succeeds before the
/// sixth claim: the spent budget gets one last attempt, which ends `last`. Returns the world
/// and the first task's id once the passes are over.
async fn spent_budget_then_a_success(last: RunStatus) -> (World, TaskId) {
    let w = World::with_thread().await;
    let e = w.engine("w1");
    let id = asking_task_whose_runs_fail(&w, &e).await;
    for _ in 0..2_000 {
        if w.row(&id).await.outbox.failures == FAILURE_BUDGET {
            break;
        }
        passes(&w, &e, 1, 1).await;
    }
    let spent = w.row(&id).await.outbox;
    assert_eq!(spent.failures, FAILURE_BUDGET, "the runs spent the budget");
    assert_ne!(
        spent.status,
        NotifyStatus::DeadLetter,
        "not dead-lettered yet"
    );
    w.launcher.finish_every_new_run(Some(RunStatus::Success));
    let done = completed("rt-2", "done");
    let other = w.submit(&e, "other", "rt-2", Some(done.clone())).await;
    w.driver.on_status("rt-2", [Ok(done)]);
    passes(&w, &e, 1, 1).await;
    assert_eq!(
        w.row(&other).await.outbox.status,
        NotifyStatus::Delivered,
        "the other task's run succeeded before the spent notification's next claim"
    );
    w.launcher.finish_every_new_run(Some(last));
    passes(&w, &e, 40, 60).await;
    (w, id)
}

#[tokio::test]
async fn e_a_spent_budget_gets_one_last_attempt_once_a_run_succeeded_since() {
    let (w, id) = spent_budget_then_a_success(RunStatus::Success).await;
    let starts = w.launcher.starts_for(&id);
    assert_eq!(
        starts.len(),
        FAILURE_BUDGET as usize + 1,
        "one last attempt"
    );
    assert_eq!(
        starts[FAILURE_BUDGET as usize].0.key,
        key(&id, 1, FAILURE_BUDGET)
    );
    let row = w.row(&id).await;
    assert_eq!(
        (
            row.outbox.status,
            row.outbox.notified_version,
            row.outbox.dead_letter
        ),
        (NotifyStatus::Delivered, 1, None)
    );
}

#[tokio::test]
async fn e_a_failed_last_attempt_dead_letters_without_another() {
    let (w, id) = spent_budget_then_a_success(RunStatus::Error).await;
    assert_eq!(
        w.launcher.starts_for(&id).len(),
        FAILURE_BUDGET as usize + 1,
        "exactly one last attempt"
    );
    let row = w.row(&id).await;
    assert_eq!(row.outbox.status, NotifyStatus::DeadLetter);
    assert_eq!(row.outbox.dead_letter, Some((1, DeadLetterReason::Budget)));
}

/// The planted bug skips the last attempt: the spent budget is dead-lettered after five runs
/// although another task's run succeeded since.
#[cfg(feature = "mutations")]
#[tokio::test]
async fn e_under_the_planted_bug_a_spent_budget_is_dead_lettered_without_a_last_attempt() {
    use tasklatch_core::mutation::{activate, Mutant};
    let _on = activate(Some(Mutant::LastAttemptSkipped));
    let (w, id) = spent_budget_then_a_success(RunStatus::Success).await;
    assert_eq!(w.launcher.starts_for(&id).len(), FAILURE_BUDGET as usize);
    assert_eq!(w.row(&id).await.outbox.status, NotifyStatus::DeadLetter);
}

#[tokio::test]
async fn f_degrade_recover_degrade_notifies_twice_and_never_sends_an_empty_event() {
    let w = World::with_thread().await;
    w.launcher.finish_every_new_run(Some(RunStatus::Success));
    let e = w.engine("w1");
    let id = w
        .submit(&e, "build", "rt-1", Some(report("rt-1", "working")))
        .await;
    let err = |t: &str| Err(unavailable(ErrorClass::Timeout, t));
    w.driver.on_status(
        "rt-1",
        [
            err("t/o after 5s"),
            err("t/o after 6s"),
            err("t/o after 7s"),
            err("t/o after 9s (a new text)"),
            Ok(report("rt-1", "working")),
            err("t/o again"),
            err("t/o again 2"),
            err("t/o again 3"),
            Ok(report("rt-1", "working")),
        ],
    );
    passes(&w, &e, 12, 3_600).await;
    assert_eq!(w.driver.status_calls("rt-1"), 12);
    let starts = w.launcher.starts_for(&id);
    assert_eq!(
        keys(&starts),
        [key(&id, 1, 0), key(&id, 2, 0)],
        "two notifications"
    );
    for (req, _) in &starts {
        assert!(
            says_something(&req.prompt),
            "never an empty event: {}",
            req.prompt
        );
        assert_eq!(event_json(&req.prompt)["tracking_degraded"], true);
    }
    let row = w.row(&id).await;
    assert_eq!(
        (row.outbox.event_version, row.outbox.notified_version),
        (2, 2)
    );
    assert_eq!(row.outbox.status, NotifyStatus::Delivered);
    assert_eq!(row.outbox.event, None, "recovered: nothing to say now");
}

#[tokio::test]
async fn g_a_cancel_during_a_slow_poll_discards_the_poll_and_yields_one_cancelled_notification() {
    let w = World::with_thread().await;
    w.launcher.finish_every_new_run(Some(RunStatus::Success));
    let e = w.engine("w1");
    let id = w
        .submit(&e, "build", "rt-1", Some(report("rt-1", "working")))
        .await;
    w.driver
        .on_status("rt-1", [Ok(completed("rt-1", "stale result"))]);
    w.advance(30);
    let gate = w.driver.gate(CallKind::GetStatus, "rt-1");
    let (pass, ()) = tokio::join!(e.run_once(), async {
        gate.entered().await;
        w.advance(5);
        assert_eq!(
            e.cancel(&scope(), &by_id(&id)).await,
            Ok(CancelOutcome::Requested(id.clone()))
        );
        gate.open();
    });
    assert_eq!(
        (pass.poll.claimed, pass.poll.applied, pass.poll.refused),
        (1, 0, 1)
    );
    let row = w.row(&id).await;
    assert_eq!(
        row.remote.status,
        RemoteStatus::Working,
        "the poll result was discarded"
    );
    assert_eq!(row.outbox.event_version, 0);

    passes(&w, &e, 4, 20).await;
    let starts = w.launcher.starts_for(&id);
    assert_eq!(starts.len(), 1, "exactly one notification");
    assert_eq!(event_json(&starts[0].0.prompt)["status"], "cancelled");
    assert!(!starts[0].0.prompt.contains("stale result"));
    assert_eq!(w.driver.cancel_calls("rt-1"), 1);
    assert_eq!(
        w.driver.status_calls("rt-1"),
        1,
        "never polled after the cancel request"
    );
    let row = w.row(&id).await;
    assert_eq!(
        (row.remote.status, row.cancel.status),
        (RemoteStatus::Cancelled, CancelStatus::Done)
    );
    assert_eq!(row.outbox.status, NotifyStatus::Delivered);
}

#[tokio::test]
async fn g_a_repeated_cancel_during_a_slow_remote_cancel_never_starts_a_second_one() {
    let w = World::with_thread().await;
    let a = w.engine("w-a");
    let b = w.engine("w-b");
    let id = w
        .submit(&a, "build", "rt-1", Some(report("rt-1", "working")))
        .await;
    assert_eq!(
        a.cancel(&scope(), &by_id(&id)).await,
        Ok(CancelOutcome::Requested(id.clone()))
    );
    let gate = w.driver.gate(CallKind::Cancel, "rt-1");
    let (pass_a, ()) = tokio::join!(a.run_once(), async {
        gate.entered().await;
        for n in 0..3 {
            assert_eq!(
                b.cancel(&scope(), &by_id(&id)).await,
                Ok(CancelOutcome::AlreadyRequested(id.clone()))
            );
            w.advance(5 + n);
            let pass_b = b.run_once().await;
            assert_eq!(
                pass_b.cancel.claimed, 0,
                "the cancel in progress keeps its lease"
            );
        }
        gate.open();
    });
    assert_eq!(pass_a.cancel.applied, 1);
    passes(&w, &b, 3, 20).await;
    assert_eq!(w.driver.cancel_calls("rt-1"), 1, "one remote cancel, ever");
    let row = w.row(&id).await;
    assert_eq!(
        (row.remote.status, row.cancel.status),
        (RemoteStatus::Cancelled, CancelStatus::Done)
    );
}

#[tokio::test]
async fn g_a_poll_that_completed_before_the_cancel_request_is_discarded_too() {
    let w = World::with_thread().await;
    w.launcher.finish_every_new_run(Some(RunStatus::Success));
    let e = w.engine("w1");
    let x = w
        .submit(&e, "x", "rt-x", Some(report("rt-x", "working")))
        .await;
    let y = w
        .submit(&e, "y", "rt-y", Some(report("rt-y", "working")))
        .await;
    w.driver
        .on_status("rt-x", [Ok(completed("rt-x", "x done"))]);
    w.driver.on_status("rt-y", [Ok(report("rt-y", "working"))]);
    w.advance(30);
    // x answers at once; y is slow, so the batch is written after the cancel request for x
    let gate = w.driver.gate(CallKind::GetStatus, "rt-y");
    let (pass, ()) = tokio::join!(e.run_once(), async {
        gate.entered().await;
        w.advance(5);
        assert_eq!(
            e.cancel(&scope(), &by_id(&x)).await,
            Ok(CancelOutcome::Requested(x.clone()))
        );
        gate.open();
    });
    assert_eq!((pass.poll.applied, pass.poll.refused), (1, 1));
    assert_eq!(
        w.row(&x).await.remote.status,
        RemoteStatus::Working,
        "x's result was discarded"
    );
    assert_eq!(w.row(&y).await.poll.consecutive_errors, 0);
    passes(&w, &e, 3, 20).await;
    let starts = w.launcher.starts_for(&x);
    assert_eq!(starts.len(), 1);
    assert_eq!(event_json(&starts[0].0.prompt)["status"], "cancelled");
}

#[tokio::test]
async fn h_a_version_arriving_while_a_run_is_in_flight_is_delivered_after_it() {
    let w = World::with_thread().await;
    let e = w.engine("w1");
    let ask = |q: &str| tasklatch_core::snapshot::RemoteReport {
        input_request: Some(q.into()),
        ..report("rt-1", "input_required")
    };
    let id = w
        .submit(&e, "build", "rt-1", Some(ask("first question?")))
        .await;
    w.driver.on_status("rt-1", [Ok(ask("second question?"))]);
    e.run_once().await;
    assert_eq!(keys(&w.launcher.starts_for(&id)), [key(&id, 1, 0)]);

    w.advance(60);
    e.run_once().await;
    let row = w.row(&id).await;
    assert_eq!(
        row.outbox.event_version, 2,
        "recorded while run 1 is in flight"
    );
    assert_eq!(
        (row.outbox.status, row.outbox.dispatch_version),
        (NotifyStatus::Dispatched, 1)
    );

    w.launcher.finish(&run(1), RunStatus::Success).await;
    passes(&w, &e, 2, 11).await;
    let starts = w.launcher.starts_for(&id);
    assert_eq!(keys(&starts), [key(&id, 1, 0), key(&id, 2, 0)]);
    assert!(starts[0].0.prompt.contains("first question?"));
    assert!(starts[1].0.prompt.contains("second question?"));
    w.launcher.finish(&run(2), RunStatus::Success).await;
    passes(&w, &e, 2, 11).await;
    let row = w.row(&id).await;
    assert_eq!(
        (row.outbox.status, row.outbox.notified_version),
        (NotifyStatus::Delivered, 2)
    );
}

#[tokio::test]
async fn h_a_run_that_never_ends_is_interrupted_after_max_run_life_and_the_next_attempt_delivers() {
    let w = World::with_thread().await;
    let e = w.engine("w1");
    let life = Policy::default().max_run_life.as_secs();
    let id = w
        .submit(&e, "build", "rt-1", Some(completed("rt-1", "42")))
        .await;
    e.run_once().await;
    assert_eq!(keys(&w.launcher.starts_for(&id)), [key(&id, 1, 0)]);

    // Looked at while younger than max_run_life: still running, left alone.
    passes(&w, &e, 2, life / 3).await;
    assert!(
        w.launcher.interrupts().is_empty(),
        "a young run is waited for"
    );
    assert_eq!(w.row(&id).await.outbox.status, NotifyStatus::Dispatched);

    passes(&w, &e, 1, life / 3 + 1).await;
    assert_eq!(
        w.launcher.interrupts(),
        [run(1)],
        "interrupted once, when too old"
    );
    let runs = w.launcher.runs_for(&id).await;
    assert_eq!(runs[0].status, RunStatus::Interrupted);
    let row = w.row(&id).await;
    assert_eq!(
        (
            row.outbox.status,
            row.outbox.dispatch_attempt,
            row.outbox.failures
        ),
        (NotifyStatus::Retry, 1, 1),
        "counted as a failed attempt"
    );
    assert!(row
        .outbox
        .last_error
        .as_deref()
        .is_some_and(|e| e.contains("interrupted")));

    passes(&w, &e, 1, 600).await;
    assert_eq!(
        keys(&w.launcher.starts_for(&id)),
        [key(&id, 1, 0), key(&id, 1, 1)],
        "the next attempt launches on the freed thread"
    );
    w.launcher.finish(&run(2), RunStatus::Success).await;
    passes(&w, &e, 2, 11).await;
    let row = w.row(&id).await;
    assert_eq!(
        (row.outbox.status, row.outbox.notified_version),
        (NotifyStatus::Delivered, 1)
    );
    assert_eq!(w.launcher.interrupts(), [run(1)]);
}

#[tokio::test]
async fn i_a_launch_whose_reply_was_lost_is_retried_with_the_same_key_and_gets_the_same_run() {
    let w = World::with_thread().await;
    let e = w.engine("w1");
    let id = w
        .submit(&e, "build", "rt-1", Some(completed("rt-1", "42")))
        .await;
    w.launcher.lose_next_reply(&id);
    e.run_once().await;
    let row = w.row(&id).await;
    assert_eq!(
        (row.outbox.status, row.outbox.failures),
        (NotifyStatus::Pending, 1)
    );
    passes(&w, &e, 1, 5).await;
    let starts = w.launcher.starts_for(&id);
    assert_eq!(keys(&starts), [key(&id, 1, 0), key(&id, 1, 0)]);
    assert_eq!(starts[1].1, LaunchOutcome::Started(run(1)));
    assert_eq!(
        w.launcher.runs_for(&id).await.len(),
        1,
        "one run for one dispatch"
    );
    w.launcher.finish(&run(1), RunStatus::Success).await;
    passes(&w, &e, 1, 11).await;
    assert_eq!(w.row(&id).await.outbox.status, NotifyStatus::Delivered);
}

#[tokio::test]
async fn a_worker_that_paused_past_its_lease_cannot_write_even_under_the_same_worker_id() {
    let w = World::with_thread().await;
    // two lanes of one process: the same worker id, different claims
    let a = w.engine("w1");
    let b = w.engine("w1");
    let id = w
        .submit(&a, "build", "rt-1", Some(report("rt-1", "working")))
        .await;
    w.driver.on_status(
        "rt-1",
        [
            Ok(completed("rt-1", "stale 1")),
            Ok(completed("rt-1", "stale 2")),
            Ok(report("rt-1", "working")),
        ],
    );
    w.advance(30);

    // A pauses past its lease; nobody claimed meanwhile: the late result is refused
    let gate = w.driver.gate(CallKind::GetStatus, "rt-1");
    let (pass, ()) = tokio::join!(a.run_once(), async {
        gate.entered().await;
        w.advance(61);
        gate.open();
    });
    assert_eq!((pass.poll.applied, pass.poll.refused), (0, 1));
    assert_eq!(w.row(&id).await.remote.status, RemoteStatus::Working);

    // A pauses again; B (same worker id) re-claims and is still working when A wakes up
    let gate_a = w.driver.gate(CallKind::GetStatus, "rt-1");
    let a_done = Notify::new();
    let (pass_a, pass_b) = tokio::join!(
        async {
            let pass = a.run_once().await;
            a_done.notify_one();
            pass
        },
        async {
            gate_a.entered().await;
            w.advance(61);
            let gate_b = w.driver.gate(CallKind::GetStatus, "rt-1");
            let (pass_b, ()) = tokio::join!(b.run_once(), async {
                gate_b.entered().await;
                gate_a.open();
                a_done.notified().await;
                gate_b.open();
            });
            pass_b
        }
    );
    assert_eq!(
        (pass_a.poll.applied, pass_a.poll.refused),
        (0, 1),
        "A's token is superseded"
    );
    assert_eq!((pass_b.poll.claimed, pass_b.poll.applied), (1, 1));
    let row = w.row(&id).await;
    assert_eq!(
        (row.remote.status, row.remote.result.clone()),
        (RemoteStatus::Working, None)
    );
    assert!(
        w.launcher.starts().is_empty(),
        "no stale state was ever announced"
    );
}

// ------------------------------------------------------------------------------------------
// isolation and shutdown
// ------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_launch_error_for_one_task_does_not_stop_another_in_the_same_pass() {
    let w = World::with_thread().await;
    let e = w.engine("w1");
    let a = w
        .submit(&e, "a", "rt-a", Some(completed("rt-a", "1")))
        .await;
    let b = w
        .submit(&e, "b", "rt-b", Some(completed("rt-b", "2")))
        .await;
    w.launcher
        .script_starts(&a, [LaunchOutcome::Failed("gateway 502".into())]);
    let pass = e.run_once().await;
    assert_eq!((pass.notify.claimed, pass.notify.applied), (2, 2));
    let ra = w.row(&a).await;
    assert_eq!(
        (ra.outbox.status, ra.outbox.failures),
        (NotifyStatus::Pending, 1)
    );
    let rb = w.row(&b).await;
    assert_eq!(rb.outbox.status, NotifyStatus::Dispatched);
}

#[tokio::test]
async fn a_refused_write_for_one_task_does_not_stop_another_in_the_same_pass() {
    let w = World::with_thread().await;
    let e = w.engine("w1");
    let a = w.submit(&e, "a", "rt-a", None).await;
    let b = w.submit(&e, "b", "rt-b", None).await;
    w.driver.on_status("rt-a", [Ok(completed("rt-a", "1"))]);
    w.driver.on_status("rt-b", [Ok(completed("rt-b", "2"))]);
    let gate = w.driver.gate(CallKind::GetStatus, "rt-a");
    let (pass, ()) = tokio::join!(e.run_once(), async {
        gate.entered().await;
        w.advance(1);
        e.cancel(&scope(), &by_id(&a)).await.expect("cancel");
        gate.open();
    });
    assert_eq!(
        (pass.poll.claimed, pass.poll.applied, pass.poll.refused),
        (2, 1, 1)
    );
    assert_eq!(w.row(&a).await.remote.status, RemoteStatus::Submitted);
    assert_eq!(w.row(&b).await.remote.status, RemoteStatus::Completed);
    assert_eq!(
        w.launcher.starts_for(&b).len(),
        1,
        "b notified in the same pass"
    );
}

#[tokio::test]
async fn a_batch_the_store_rejects_is_written_row_by_row_and_the_poisoned_row_released() {
    let w = World::with_thread().await;
    let e = w.engine("w1");
    let a = w
        .submit(&e, "a", "rt-a", Some(completed("rt-a", "1")))
        .await;
    let b = w
        .submit(&e, "b", "rt-b", Some(completed("rt-b", "2")))
        .await;
    w.launcher.finish_every_new_run(Some(RunStatus::Success));
    w.store.poison(&a);
    let pass = e.run_once().await;
    assert_eq!((pass.notify.applied, pass.notify.released), (1, 1));
    // b's run ended at once, so the claim that launched it saw it end and wrote that.
    assert_eq!(w.row(&b).await.outbox.status, NotifyStatus::Delivered);
    let ra = w.row(&a).await;
    assert_eq!(ra.outbox.failures, 1, "an unexpected error is counted");
    assert_eq!(ra.outbox.lease, None);
    assert!(ra.outbox.status.in_flight(), "the phase is left as it was");
}

#[tokio::test]
async fn a_poll_result_the_store_rejects_is_a_counted_failure_that_backs_off_and_degrades() {
    let w = World::with_thread().await;
    w.launcher.finish_every_new_run(Some(RunStatus::Success));
    let e = w.engine("w1");
    let a = w
        .submit(&e, "a", "rt-a", Some(report("rt-a", "working")))
        .await;
    passes(&w, &e, 2, 1).await;
    w.driver
        .on_status("rt-a", [Ok(completed("rt-a", "POISON"))]);
    w.store.poison_result("POISON");
    let mut delays = Vec::new();
    for errors in 1..=3 {
        let due = w.row(&a).await.poll.next_poll_at.expect("still polled");
        w.clock.set(due);
        let pass = e.run_once().await;
        assert_eq!(pass.poll.applied, 1, "the failed poll is written");
        let row = w.row(&a).await;
        assert_eq!(row.poll.consecutive_errors, errors, "counted");
        assert_eq!(row.poll.lease, None);
        let error = row.poll.last_error.expect("kept");
        assert!(
            error.message.contains("could not be stored"),
            "{}",
            error.message
        );
        delays.push(row.poll.next_poll_at.expect("still polled").since(due));
    }
    assert!(
        delays.windows(2).all(|d| d[0] < d[1]),
        "the backoff grows: {delays:?}"
    );
    passes(&w, &e, 2, 1).await;
    let starts = w.launcher.starts_for(&a);
    let last = &starts.last().expect("notified").0.prompt;
    assert_eq!(
        event_json(last)["tracking_degraded"],
        true,
        "the third failure in a row is reported"
    );
}

#[tokio::test]
async fn begin_shutdown_releases_claims_without_counting_a_failure() {
    let w = World::with_thread().await;
    let e = w.engine("w1");
    let notify = w
        .submit(&e, "n", "rt-n", Some(completed("rt-n", "1")))
        .await;
    let poll = w.submit(&e, "p", "rt-p", None).await;
    let cancel = w
        .submit(&e, "c", "rt-c", Some(report("rt-c", "working")))
        .await;
    e.cancel(&scope(), &by_id(&cancel)).await.unwrap();

    e.begin_shutdown();
    let pass = e.run_once().await;
    assert_eq!(
        (
            pass.cancel.released,
            pass.poll.released,
            pass.notify.released
        ),
        (1, 1, 1)
    );
    assert!(
        w.launcher.starts().is_empty() && w.driver.calls().len() == 3,
        "only the 3 submits"
    );
    let now = w.now();
    let rn = w.row(&notify).await;
    assert_eq!(
        (
            rn.outbox.failures,
            rn.outbox.lease.clone(),
            rn.outbox.due_at
        ),
        (0, None, now)
    );
    let rp = w.row(&poll).await;
    assert_eq!(
        (rp.poll.lease.clone(), rp.poll.next_poll_at),
        (None, Some(now))
    );
    let rc = w.row(&cancel).await;
    assert_eq!(
        (
            rc.cancel.failures,
            rc.cancel.lease.clone(),
            rc.cancel.due_at
        ),
        (0, None, Some(now))
    );

    // another worker picks everything up at once
    let other = w.engine("w2");
    let pass = other.run_once().await;
    assert_eq!((pass.cancel.applied, pass.poll.applied), (1, 1));
    assert_eq!(w.launcher.starts_for(&notify).len(), 1);
}

// ------------------------------------------------------------------------------------------
// Answers to input requests
// ------------------------------------------------------------------------------------------

fn asking(remote_id: &str) -> tasklatch_core::snapshot::RemoteReport {
    tasklatch_core::snapshot::RemoteReport {
        input_request: Some("[q1] which colour?".into()),
        ..report(remote_id, "input_required")
    }
}

fn answer_req(id: &TaskId, text: &str) -> tasklatch_core::store::AnswerRequest {
    tasklatch_core::store::AnswerRequest {
        task_id: id.clone(),
        request_id: "q1".into(),
        text: tasklatch_core::secret::Secret::new(text),
    }
}

fn answer_calls(w: &World) -> Vec<DriverCall> {
    w.driver
        .calls()
        .into_iter()
        .filter(|c| matches!(c, DriverCall::Answer(..)))
        .collect()
}

/// A recorded answer is sent by the next poll pass, once, before that pass polls; further
/// passes never send it again.
#[tokio::test]
async fn an_answer_is_sent_once_by_the_next_poll_pass() {
    use tasklatch_core::status::AnswerStatus;
    use tasklatch_core::store::AnswerOutcome;
    let w = World::with_thread().await;
    let e = w.engine("w1");
    let id = w.submit(&e, "build", "rt-1", Some(asking("rt-1"))).await;
    w.driver.set_status("rt-1", [Ok(report("rt-1", "working"))]);
    let got = e.answer(&scope(), answer_req(&id, "teal please")).await;
    assert_eq!(got, Ok(AnswerOutcome::Recorded(id.clone())));
    e.run_once().await;
    let sent = answer_calls(&w);
    assert_eq!(
        sent,
        [DriverCall::Answer(
            "rt-1".into(),
            "q1".into(),
            "teal please".into()
        )]
    );
    let calls = w.driver.calls();
    let at = |c: &DriverCall| calls.iter().position(|x| x == c);
    assert!(
        at(&sent[0]) < at(&DriverCall::GetStatus("rt-1".into())),
        "{calls:?}"
    );
    let row = w.row(&id).await;
    assert_eq!(row.answer.status, AnswerStatus::Sent);
    assert_eq!(row.remote.status, RemoteStatus::Working);
    passes(&w, &e, 5, 30).await;
    assert_eq!(answer_calls(&w).len(), 1, "never sent again");
}

/// A timeout leaves the answer `unconfirmed`: never sent again, and the same question cannot be
/// answered twice.
#[tokio::test]
async fn an_unconfirmed_answer_is_never_resent() {
    use tasklatch_core::status::AnswerStatus;
    use tasklatch_core::store::AnswerOutcome;
    let w = World::with_thread().await;
    let e = w.engine("w1");
    let id = w.submit(&e, "build", "rt-1", Some(asking("rt-1"))).await;
    w.driver.set_status("rt-1", [Ok(asking("rt-1"))]);
    w.driver.on_answer(
        "rt-1",
        [Err(unavailable(
            ErrorClass::Timeout,
            "timed out teal please",
        ))],
    );
    e.answer(&scope(), answer_req(&id, "teal please"))
        .await
        .expect("recorded");
    e.run_once().await;
    passes(&w, &e, 5, 120).await;
    assert_eq!(answer_calls(&w).len(), 1, "at most once");
    let row = w.row(&id).await;
    assert_eq!(row.answer.status, AnswerStatus::Unconfirmed);
    assert_eq!(row.answer.text, None);
    let error = row.answer.error.unwrap_or_default();
    assert!(
        !error.contains("teal please"),
        "the answer is redacted: {error}"
    );
    let again = e.answer(&scope(), answer_req(&id, "teal please")).await;
    assert_eq!(again, Ok(AnswerOutcome::AlreadyAnswered(id)));
}

#[tokio::test]
async fn a_run_that_ends_within_the_confirm_wait_is_written_once_and_a_longer_one_dispatched() {
    let w = World::with_thread().await;
    let e = w.engine("w1");
    let quick = w
        .submit(&e, "q", "rt-q", Some(completed("rt-q", "1")))
        .await;
    w.launcher.finish_new_runs([RunStatus::Success]);
    w.launcher.finish_every_new_run(None);
    let slow = w
        .submit(&e, "s", "rt-s", Some(completed("rt-s", "2")))
        .await;
    let pass = e.run_once().await;
    assert_eq!((pass.notify.claimed, pass.notify.applied), (2, 2));
    let (q, s) = (w.row(&quick).await, w.row(&slow).await);
    assert_eq!(
        q.outbox.status,
        NotifyStatus::Delivered,
        "one write: no dispatched"
    );
    assert_eq!(q.outbox.launched_at, None, "never written dispatched");
    assert_eq!(s.outbox.status, NotifyStatus::Dispatched);
    let slow_run = s.outbox.run_id.clone().expect("the slow run is recorded");
    let looked: Vec<_> = w.launcher.lookups();
    assert_eq!(
        looked.iter().filter(|r| **r == slow_run).count(),
        5,
        "the wait looks at a running run a bounded number of times"
    );
    assert_eq!(w.launcher.starts().len(), 2);
}
