//! DOMAIN §3 and §6: peer outages are waited out, never counted. Ten minutes without the Agent
//! Server, or without the MCP server during a cancel, end with every notification delivered
//! once and the cancel sent when the server returns — no dead letter, no failure spent; an
//! answer recorded during an MCP outage is held and sent once when the server is back.

mod support;

use support::*;
use tasklatch_core::ids::TaskId;
use tasklatch_core::policy::{CANCEL_BUDGET, FAILURE_BUDGET};
use tasklatch_core::ports::RunStatus;
use tasklatch_core::remote::ErrorClass;
use tasklatch_core::secret::Secret;
use tasklatch_core::snapshot::RemoteReport;
use tasklatch_core::status::{AnswerStatus, CancelStatus, NotifyStatus, RemoteStatus};
use tasklatch_core::store::{AnswerOutcome, AnswerRequest, CancelOutcome, CancelTarget, Store};

/// Simulated seconds per engine pass in these tests.
const STEP: u64 = 10;
/// The outage: ten minutes.
const OUTAGE: u64 = 600;

async fn run_for(w: &World, e: &TestEngine, seconds: u64) {
    for _ in 0..seconds / STEP {
        e.run_once().await;
        w.advance(STEP);
    }
}

#[tokio::test]
async fn an_agent_server_down_for_ten_minutes_delivers_every_notification_once_when_back() {
    let w = World::with_thread().await;
    let e = w.engine("w1");
    let mut ids: Vec<TaskId> = Vec::new();
    for n in 0..3 {
        let remote = format!("rt-{n}");
        let done = Some(completed(&remote, "done"));
        ids.push(w.submit(&e, &format!("job-{n}"), &remote, done).await);
    }
    w.launcher.set_down(true);
    run_for(&w, &e, OUTAGE).await;
    let tries = w.launcher.starts().len();
    assert!(
        tries > 3 * FAILURE_BUDGET as usize,
        "every task was tried past its failure budget: {tries} tries"
    );
    for id in &ids {
        let row = w.row(id).await;
        assert_ne!(row.outbox.status, NotifyStatus::DeadLetter, "{id}");
        assert_eq!(row.outbox.failures, 0, "{id}: an outage is not a failure");
        assert!(row.outbox.outages > 0 && row.outbox.unavailable_since.is_some());
    }
    w.launcher.set_down(false);
    w.launcher.finish_every_new_run(Some(RunStatus::Success));
    run_for(&w, &e, 120).await;
    for id in &ids {
        let row = w.row(id).await;
        assert_eq!(row.outbox.status, NotifyStatus::Delivered, "{id}");
        assert_eq!(
            (row.outbox.event_version, row.outbox.notified_version),
            (1, 1)
        );
        assert_eq!(
            w.launcher.runs_for(id).await.len(),
            1,
            "{id}: delivered once"
        );
    }
    let overview = w.store.overview().await.expect("overview");
    assert_eq!(overview.cancel_dead_letters, 0);
    assert!(
        overview.dead_letters.iter().all(|(_, n)| *n == 0),
        "{overview:?}"
    );
}

#[tokio::test]
async fn an_mcp_server_down_for_ten_minutes_during_a_cancel_gets_the_cancel_when_back() {
    let w = World::with_thread().await;
    w.launcher.finish_every_new_run(Some(RunStatus::Success));
    let e = w.engine("w1");
    let id = w
        .submit(&e, "build", "rt-1", Some(report("rt-1", "working")))
        .await;
    let down = || Err(unavailable(ErrorClass::Connection, "connection refused"));
    w.driver.on_cancel("rt-1", [down()]);
    assert_eq!(
        e.cancel(&scope(), &CancelTarget::Id(id.clone()))
            .await
            .unwrap(),
        CancelOutcome::Requested(id.clone())
    );
    run_for(&w, &e, OUTAGE).await;
    let calls = w.driver.cancel_calls("rt-1");
    assert!(
        calls > CANCEL_BUDGET as usize,
        "retried past the budget: {calls} calls"
    );
    let row = w.row(&id).await;
    assert_eq!(row.cancel.status, CancelStatus::Requested);
    assert_eq!(row.cancel.failures, 0, "an outage is not a failure");
    assert!(row.cancel.unavailable_since.is_some());
    w.driver
        .on_cancel("rt-1", [Ok(report("rt-1", "cancelled"))]);
    run_for(&w, &e, 120).await;
    let row = w.row(&id).await;
    assert_eq!(row.cancel.status, CancelStatus::Done, "the cancel was sent");
    assert_eq!(row.remote.status, RemoteStatus::Cancelled);
    assert_eq!(
        (row.cancel.unavailable_since, row.cancel.outages),
        (None, 0)
    );
    assert_eq!(row.outbox.status, NotifyStatus::Delivered);
    assert_eq!(w.launcher.runs_for(&id).await.len(), 1, "one notification");
    assert_eq!(
        w.store
            .overview()
            .await
            .expect("overview")
            .cancel_dead_letters,
        0
    );
}

#[tokio::test]
async fn a_server_healthy_again_has_its_backed_off_tasks_polled_within_a_minute() {
    let w = World::with_thread().await;
    let e = w.engine("w1");
    let remotes = ["rt-1", "rt-2", "rt-3"];
    let mut ids = Vec::new();
    for remote in remotes {
        let first = Some(report(remote, "working"));
        ids.push(w.submit(&e, remote, remote, first).await);
        let down = Err(unavailable(ErrorClass::Connection, "connection refused"));
        w.driver.set_status(remote, [down]);
    }
    // 130 minutes down: the polls back off to max_poll_backoff (an hour); the last ones ran
    // at about 123 minutes.
    for _ in 0..130 {
        e.run_once().await;
        w.advance(60);
    }
    // One task at a time is the probe (due within PROBE_INTERVAL); the others wait.
    let mut far = 0;
    for id in &ids {
        let next = w.row(id).await.poll.next_poll_at.expect("pollable");
        far += usize::from(next.since(w.now()) > secs(600));
    }
    assert!(far >= 2, "backed off far beyond a minute: {far} of 3");
    let before: Vec<usize> = remotes.iter().map(|r| w.driver.status_calls(r)).collect();
    for remote in remotes {
        w.driver.set_status(remote, [Ok(completed(remote, "done"))]);
    }
    run_for(&w, &e, 60).await;
    for ((remote, id), calls) in remotes.iter().zip(&ids).zip(before) {
        assert!(w.driver.status_calls(remote) > calls, "{remote} polled");
        assert_eq!(
            w.row(id).await.remote.status,
            RemoteStatus::Completed,
            "{remote}"
        );
    }
}

/// DOMAIN §6: an answer is sent at most once, so a call the server cannot confirm spends it.
/// While the polls find the server down, a recorded answer is held (still pending, no call);
/// once a poll answers again it is sent, once, and the task goes on to its end.
#[tokio::test]
async fn an_answer_recorded_during_an_mcp_outage_is_sent_once_when_the_server_is_back() {
    let w = World::with_thread().await;
    w.launcher.finish_every_new_run(Some(RunStatus::Success));
    let e = w.engine("w1");
    let asking = RemoteReport {
        input_request: Some("[q1] which colour?".into()),
        ..report("rt-1", "input_required")
    };
    let id = w.submit(&e, "ask", "rt-1", Some(asking.clone())).await;
    let down = || Err(unavailable(ErrorClass::Connection, "connection refused"));
    w.driver.set_status("rt-1", [down()]);
    let refused = unavailable(ErrorClass::Connection, "connection refused");
    w.driver.set_answer_outcomes("rt-1", [Err(refused)]);
    // An input_required task is polled once a minute at most: this one has seen the outage.
    run_for(&w, &e, 120).await;
    assert!(w.driver.status_calls("rt-1") > 0, "polled into the outage");
    let request = AnswerRequest {
        task_id: id.clone(),
        request_id: "q1".into(),
        text: Secret::new("teal please"),
    };
    let recorded = e.answer(&scope(), request).await;
    assert_eq!(recorded, Ok(AnswerOutcome::Recorded(id.clone())));
    run_for(&w, &e, OUTAGE).await;
    let answers = |w: &World| {
        let calls = w.driver.calls();
        calls
            .iter()
            .filter(|c| matches!(c, DriverCall::Answer(..)))
            .count()
    };
    assert_eq!(answers(&w), 0, "no answer sent into the outage");
    assert_eq!(w.row(&id).await.answer.status, AnswerStatus::Pending);
    w.driver.set_answer_outcomes("rt-1", []);
    w.driver
        .set_status("rt-1", [Ok(asking), Ok(completed("rt-1", "teal"))]);
    // The probe (every 30 s) finds the server back; the held answer goes out the pass after,
    // not a whole input_required interval (60 s) later.
    run_for(&w, &e, 50).await;
    let row = w.row(&id).await;
    assert_eq!(answers(&w), 1, "sent once");
    assert_eq!(row.answer.status, AnswerStatus::Sent);
    assert_eq!(row.remote.status, RemoteStatus::Completed);
    assert_eq!(row.outbox.status, NotifyStatus::Delivered);
    // The question, tracking degraded by the outage, the question again, the end: each once.
    let runs = w.launcher.runs_for(&id).await;
    assert_eq!(runs.len() as u64, row.outbox.notified_version, "{runs:?}");
    let last = runs.last().map(|r| r.prompt.as_str()).unwrap_or_default();
    assert!(last.contains("\"status\":\"completed\""), "{last}");
}
