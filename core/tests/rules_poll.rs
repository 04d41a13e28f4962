//! DOMAIN §4 (polling): the next poll, the failure backoff, degraded tracking, protocol errors,
//! bounded text, and the poll write guard.

mod support;

use std::time::Duration;

use support::*;
use tasklatch_core::event::Event;
use tasklatch_core::ids::TaskId;
use tasklatch_core::lease::{LeaseKind, Refusal};
use tasklatch_core::mem_store::claimable;
use tasklatch_core::policy::{
    Policy, BACKOFF_EXPONENT_CAP, DEGRADED_AFTER, INPUT_REQUIRED_FLOOR, MAX_ARTIFACT, MAX_BATCH,
    MAX_INPUT_REQUEST, MAX_POLL_DELAY, MAX_RESULT_PREVIEW, MAX_SHOWN_ERROR, MAX_STORED_ERROR,
};
use tasklatch_core::ports::DriverError;
use tasklatch_core::remote::{ErrorClass, PollError};
use tasklatch_core::snapshot::{validate, ProtocolError, RemoteReport, NO_QUESTION};
use tasklatch_core::status::{CancelStatus, NotifyStatus, RemoteStatus};
use tasklatch_core::store::{ClaimRequest, PollWrite, Store, StoreError};
use tasklatch_core::task::TaskRow;
use tasklatch_core::text::PublicTask;
use tasklatch_core::transitions::guard;
use tasklatch_core::transitions::poll::{next_poll_delay, on_failure, on_report, MIN_POLL_DELAY};
use tasklatch_core::transitions::submit::new_row;

const TASK: &str = "tsk_1";
const REMOTE: &str = "rt-tsk_1";

fn policy() -> Policy {
    Policy::default()
}

fn fresh_row() -> TaskRow {
    new_row(identity(TASK, "build"), None, T0, &policy())
}

fn row_with_errors(n: u32) -> TaskRow {
    let mut row = fresh_row();
    row.remote.status = RemoteStatus::Working;
    row.poll.consecutive_errors = n;
    if n > 0 {
        row.poll.last_error = Some(PollError {
            class: ErrorClass::Timeout,
            message: "earlier".into(),
        });
    }
    row
}

fn hinted(status: &str, hint: f64) -> RemoteReport {
    RemoteReport {
        poll_hint_secs: Some(hint),
        ..report(REMOTE, status)
    }
}

fn next_after(r: RemoteReport) -> Option<Duration> {
    let row = fresh_row();
    let update = on_report(&row, validate(&r, &row.identity.handle), at(100), &policy());
    update.next_poll_at.map(|t| t.since(at(100)))
}

fn timeout(text: &str) -> PollError {
    PollError {
        class: ErrorClass::Timeout,
        message: text.to_owned(),
    }
}

// ------------------------------------------------------------------------------------------
// next poll
// ------------------------------------------------------------------------------------------

#[test]
fn next_poll_uses_the_server_hint() {
    assert_eq!(next_after(hinted("working", 7.0)), Some(secs(7)));
    assert_eq!(
        next_after(hinted("working", 2.5)),
        Some(Duration::from_millis(2_500))
    );
    assert_eq!(
        next_poll_delay(RemoteStatus::Working, Some(secs(45)), &policy()),
        Some(secs(45))
    );
}

#[test]
fn next_poll_uses_the_interval_without_a_hint() {
    assert_eq!(
        next_after(report(REMOTE, "working")),
        Some(policy().poll_interval)
    );
    let slow = Policy {
        poll_interval: secs(123),
        ..policy()
    };
    assert_eq!(
        next_poll_delay(RemoteStatus::Working, None, &slow),
        Some(secs(123))
    );
}

#[test]
fn input_required_is_polled_no_sooner_than_60_seconds() {
    assert_eq!(INPUT_REQUIRED_FLOOR, secs(60));
    assert_eq!(next_after(hinted("input_required", 5.0)), Some(secs(60)));
    assert_eq!(next_after(report(REMOTE, "input_required")), Some(secs(60)));
    assert_eq!(next_after(hinted("input_required", 90.0)), Some(secs(90)));
    assert_eq!(
        next_after(hinted("working", 5.0)),
        Some(secs(5)),
        "only input_required"
    );
}

#[test]
fn next_poll_is_at_most_one_day() {
    assert_eq!(MAX_POLL_DELAY, secs(86_400));
    assert_eq!(
        next_after(hinted("working", 10.0 * 86_400.0)),
        Some(secs(86_400))
    );
    assert_eq!(
        next_after(hinted("input_required", 1e12)),
        Some(secs(86_400))
    );
    let lazy = Policy {
        poll_interval: secs(7 * 86_400),
        ..policy()
    };
    assert_eq!(
        next_poll_delay(RemoteStatus::Working, None, &lazy),
        Some(secs(86_400))
    );
}

#[test]
fn terminal_tasks_get_no_next_poll() {
    for status in ["completed", "failed", "cancelled"] {
        assert_eq!(next_after(hinted(status, 5.0)), None, "{status}");
        assert_eq!(next_after(report(REMOTE, status)), None, "{status}");
    }
    for status in [
        RemoteStatus::Completed,
        RemoteStatus::Failed,
        RemoteStatus::Cancelled,
    ] {
        assert_eq!(next_poll_delay(status, Some(secs(1)), &policy()), None);
    }
}

#[test]
fn a_zero_hint_does_not_spin() {
    assert!(MIN_POLL_DELAY >= secs(1));
    assert_eq!(next_after(hinted("working", 0.0)), Some(MIN_POLL_DELAY));
    assert_eq!(next_after(hinted("working", 1e-9)), Some(MIN_POLL_DELAY));
    let eager = Policy {
        poll_interval: Duration::ZERO,
        ..policy()
    };
    assert_eq!(
        next_poll_delay(RemoteStatus::Working, None, &eager),
        Some(MIN_POLL_DELAY)
    );
}

// ------------------------------------------------------------------------------------------
// failed polls
// ------------------------------------------------------------------------------------------

#[test]
fn failed_poll_backs_off_as_interval_times_two_to_the_errors_before_capped() {
    let p = policy();
    let expected = |before: u32, p: &Policy| {
        let factor = 1u64 << before.min(BACKOFF_EXPONENT_CAP);
        let d = secs(p.poll_interval.as_secs() * factor);
        d.min(p.max_poll_backoff)
    };
    for before in 0..24 {
        let u = on_failure(&row_with_errors(before), timeout("t/o"), at(100), &p);
        assert_eq!(
            u.next_poll_at,
            Some(at(100).plus(expected(before, &p))),
            "before={before}"
        );
        assert_eq!(u.consecutive_errors, before + 1);
    }
    assert_eq!(
        on_failure(&row_with_errors(0), timeout("x"), at(100), &p).next_poll_at,
        Some(at(130)),
        "the first failure waits one interval"
    );
    assert_eq!(
        on_failure(&row_with_errors(30), timeout("x"), at(100), &p).next_poll_at,
        Some(at(100).plus(p.max_poll_backoff)),
        "capped at max_poll_backoff"
    );
    // with a cap out of reach, the exponent itself stops at 16
    let uncapped = Policy {
        max_poll_backoff: secs(1_000 * 86_400),
        ..policy()
    };
    for before in [16, 17, 40] {
        let u = on_failure(&row_with_errors(before), timeout("x"), at(0), &uncapped);
        assert_eq!(u.next_poll_at, Some(at(30 * 65_536)), "before={before}");
    }
}

#[test]
fn a_failed_poll_keeps_the_remote_state() {
    let mut row = row_with_errors(0);
    row.remote.status = RemoteStatus::InputRequired;
    row.remote.input_request = Some("which branch?".into());
    let u = on_failure(&row, timeout("t/o"), at(5), &policy());
    assert_eq!(u.remote, row.remote);
}

#[test]
fn tracking_is_degraded_from_the_third_consecutive_error_not_the_second() {
    assert_eq!(DEGRADED_AFTER, 3);
    let first = on_failure(&row_with_errors(0), timeout("a"), at(1), &policy());
    let second = on_failure(&row_with_errors(1), timeout("b"), at(1), &policy());
    let third = on_failure(&row_with_errors(2), timeout("c"), at(1), &policy());
    assert_eq!((first.consecutive_errors, first.event.is_none()), (1, true));
    assert_eq!(
        (second.consecutive_errors, second.event.is_none()),
        (2, true)
    );
    assert_eq!(third.consecutive_errors, 3);
    let (event, _) = third.event.expect("degraded from the third error");
    assert!(event.tracking_degraded);
    assert_eq!(event.status, RemoteStatus::Working);
    assert_eq!(event.poll_error_class.as_deref(), Some("timeout"));
    assert_eq!(event.poll_error.as_deref(), Some("c"));
    let mut row = row_with_errors(3);
    assert!(row.tracking_degraded());
    row.poll.consecutive_errors = 2;
    assert!(!row.tracking_degraded());
}

#[test]
fn a_successful_poll_resets_the_consecutive_errors() {
    let row = row_with_errors(7);
    let u = on_report(
        &row,
        validate(&report(REMOTE, "working"), &row.identity.handle),
        at(1),
        &policy(),
    );
    assert_eq!((u.consecutive_errors, u.last_error), (0, None));
    assert_eq!(u.event, None, "working, no longer degraded: nothing to say");
    assert_eq!(u.next_poll_at, Some(at(1).plus(policy().poll_interval)));
}

// ------------------------------------------------------------------------------------------
// protocol errors and bounded text
// ------------------------------------------------------------------------------------------

#[test]
fn protocol_errors_make_the_task_terminal_failed_with_a_bounded_error() {
    let row = fresh_row();
    let h = &row.identity.handle;
    let cases: Vec<(&str, RemoteReport, ProtocolError)> = vec![
        (
            "wrong id",
            report("rt-someone-else", "working"),
            ProtocolError::WrongTaskId,
        ),
        (
            "NaN hint",
            hinted("working", f64::NAN),
            ProtocolError::BadPollHint,
        ),
        (
            "infinite hint",
            hinted("working", f64::INFINITY),
            ProtocolError::BadPollHint,
        ),
        (
            "negative hint",
            hinted("working", -1.0),
            ProtocolError::BadPollHint,
        ),
        (
            "unknown status",
            report(REMOTE, "done"),
            ProtocolError::UnknownStatus,
        ),
        (
            "local status",
            report(REMOTE, "submitted"),
            ProtocolError::UnknownStatus,
        ),
        (
            "oversized input request",
            RemoteReport {
                input_request: Some("q".repeat(MAX_INPUT_REQUEST + 1)),
                ..report(REMOTE, "input_required")
            },
            ProtocolError::InputRequestTooLarge,
        ),
        (
            "oversized artifact",
            RemoteReport {
                artifact: Some("a".repeat(MAX_ARTIFACT + 1)),
                ..report(REMOTE, "completed")
            },
            ProtocolError::ArtifactTooLarge,
        ),
    ];
    for (name, r, expected) in cases {
        let checked = validate(&r, h);
        assert_eq!(checked.clone().err(), Some(expected), "{name}");
        let u = on_report(&row, checked, at(1), &policy());
        assert_eq!(u.remote.status, RemoteStatus::Failed, "{name}");
        assert_eq!(u.next_poll_at, None, "{name}: never retried");
        let error = u.remote.error.clone().expect("an error is stored");
        assert!(error.starts_with("protocol error"), "{name}: {error}");
        assert!(error.chars().count() <= MAX_STORED_ERROR, "{name}");
        assert!(
            u.remote.input_request.is_none() && u.remote.artifact.is_none(),
            "{name}"
        );
        let (event, _) = u.event.expect("a failed task notifies");
        assert_eq!(event.status, RemoteStatus::Failed, "{name}");
    }
    // the limits themselves are allowed
    let fits = RemoteReport {
        input_request: Some("q".repeat(MAX_INPUT_REQUEST)),
        ..report(REMOTE, "input_required")
    };
    assert!(validate(&fits, h).is_ok());
}

#[tokio::test]
async fn an_unknown_task_through_the_engine_fails_for_good_and_notifies_once() {
    let w = World::with_thread().await;
    w.launcher
        .finish_every_new_run(Some(tasklatch_core::ports::RunStatus::Success));
    let e = w.engine("w1");
    let id = w.submit(&e, "build", REMOTE, None).await;
    w.driver.on_status(REMOTE, [Err(DriverError::UnknownTask)]);
    e.run_once().await;
    let row = w.row(&id).await;
    assert_eq!(row.remote.status, RemoteStatus::Failed);
    assert_eq!(row.poll.next_poll_at, None);
    assert!(row
        .remote
        .error
        .as_deref()
        .is_some_and(|e| e.starts_with("protocol error") && e.chars().count() <= MAX_STORED_ERROR));
    assert_eq!(row.outbox.event_version, 1);
    for _ in 0..5 {
        w.advance(3_600);
        e.run_once().await;
    }
    assert_eq!(
        w.driver.status_calls(REMOTE),
        1,
        "a protocol error never retries"
    );
    assert_eq!(w.launcher.starts_for(&id).len(), 1);
}

#[tokio::test]
async fn malformed_payload_detail_is_bounded_when_stored_and_when_shown() {
    let w = World::with_thread().await;
    let e = w.engine("w1");
    let id = w.submit(&e, "build", REMOTE, None).await;
    let strikes = tasklatch_core::policy::MALFORMED_STRIKES;
    let malformed = (0..strikes).map(|_| Err(DriverError::Malformed("z".repeat(20_000))));
    w.driver.on_status(REMOTE, malformed);
    for strike in 1..strikes {
        e.run_once().await;
        let row = w.row(&id).await;
        assert_eq!(
            row.remote.status,
            RemoteStatus::Submitted,
            "strike {strike} passes"
        );
        let kept = row.poll.last_error.expect("the failure is kept").message;
        assert_eq!(
            kept.chars().count(),
            MAX_STORED_ERROR,
            "bounded while passing"
        );
        w.advance(3_600);
    }
    e.run_once().await;
    let row = w.row(&id).await;
    assert_eq!(
        row.remote.status,
        RemoteStatus::Failed,
        "the fifth in a row ends it"
    );
    let stored = row.remote.error.clone().expect("error");
    assert!(stored.starts_with("protocol error: malformed payload"));
    assert_eq!(stored.chars().count(), MAX_STORED_ERROR);
    let shown = PublicTask::from_row(&row).error.expect("shown error");
    assert!(shown.chars().count() <= MAX_SHOWN_ERROR);
    let event = row.outbox.event.clone().expect("event");
    assert!(event
        .error
        .as_deref()
        .is_some_and(|e| e.chars().count() <= MAX_SHOWN_ERROR));
}

#[tokio::test]
async fn an_oversized_result_keeps_a_bounded_preview_and_a_truncated_flag() {
    let json = format!("{{\"rows\":[{}]}}", "1,".repeat(MAX_RESULT_PREVIEW));
    let row = fresh_row();
    let obs = validate(&completed(REMOTE, &json), &row.identity.handle).expect("valid");
    assert!(obs.result_truncated);
    let preview = obs.result.clone().expect("preview");
    assert_eq!(preview.chars().count(), MAX_RESULT_PREVIEW);
    assert!(json.starts_with(&preview));
    let small = validate(&completed(REMOTE, "{\"ok\":true}"), &row.identity.handle).unwrap();
    assert!(!small.result_truncated);
    assert_eq!(small.result.as_deref(), Some("{\"ok\":true}"));

    // end to end: the delivered event says it is a preview and is itself well-formed JSON
    let w = World::with_thread().await;
    let e = w.engine("w1");
    let id = w.submit(&e, "build", REMOTE, None).await;
    w.driver.on_status(REMOTE, [Ok(completed(REMOTE, &json))]);
    e.run_once().await;
    let row = w.row(&id).await;
    assert!(row.remote.result_truncated);
    let event: &Event = row.outbox.event.as_ref().expect("event");
    assert!(event.result_truncated);
    let parsed: serde_json::Value =
        serde_json::from_str(&event.canonical_json()).expect("the event is well-formed JSON");
    assert_eq!(parsed["result_truncated"], serde_json::Value::Bool(true));
    let starts = w.launcher.starts_for(&id);
    assert_eq!(starts.len(), 1);
    assert!(starts[0].0.prompt.contains("\"result_truncated\":true"));
}

#[test]
fn stored_errors_are_bounded_to_4000_chars_and_shown_errors_to_500() {
    assert_eq!((MAX_STORED_ERROR, MAX_SHOWN_ERROR), (4_000, 500));
    let mut row = fresh_row();
    let huge = "é".repeat(10_000);
    let failed = RemoteReport {
        error: Some(huge.clone()),
        ..report(REMOTE, "failed")
    };
    let u = on_report(
        &row,
        validate(&failed, &row.identity.handle),
        at(1),
        &policy(),
    );
    assert_eq!(
        u.remote.error.as_ref().map(|e| e.chars().count()),
        Some(MAX_STORED_ERROR)
    );
    let (event, _) = u.event.clone().expect("event");
    assert_eq!(
        event.error.map(|e| e.chars().count()),
        Some(MAX_SHOWN_ERROR)
    );
    row.remote = u.remote;
    let shown = PublicTask::from_row(&row).error.expect("shown");
    assert!(shown.chars().count() <= MAX_SHOWN_ERROR);

    let row = row_with_errors(2);
    let u = on_failure(&row, timeout(&huge), at(1), &policy());
    let stored = u.last_error.clone().expect("poll error");
    assert_eq!(stored.message.chars().count(), MAX_STORED_ERROR);
    let (event, _) = u.event.expect("degraded");
    assert_eq!(
        event.poll_error.map(|e| e.chars().count()),
        Some(MAX_SHOWN_ERROR)
    );
}

// ------------------------------------------------------------------------------------------
// the poll write guard
// ------------------------------------------------------------------------------------------

fn leased_row(token: u64, expires: u64) -> TaskRow {
    let mut row = fresh_row();
    row.poll.claims = token;
    row.poll.lease = Some(lease("w1", token, at(expires)));
    row
}

#[test]
fn poll_guard_accepts_the_current_unexpired_lease() {
    let row = leased_row(2, 60);
    assert_eq!(
        guard::poll_apply(&row, &lease("w1", 2, at(60)), at(59)),
        Ok(())
    );
}

#[test]
fn poll_guard_refuses_a_stale_token() {
    let row = leased_row(2, 60);
    assert_eq!(
        guard::poll_apply(&row, &lease("w1", 1, at(60)), at(10)),
        Err(Refusal::LeaseNotHeld),
        "same worker, earlier claim"
    );
    assert_eq!(
        guard::poll_apply(&row, &lease("w2", 2, at(60)), at(10)),
        Err(Refusal::LeaseNotHeld),
        "another worker"
    );
    let mut released = row.clone();
    released.poll.lease = None;
    assert_eq!(
        guard::poll_apply(&released, &lease("w1", 2, at(60)), at(10)),
        Err(Refusal::LeaseNotHeld)
    );
}

#[test]
fn poll_guard_refuses_a_result_completed_after_the_lease_expired() {
    let row = leased_row(2, 60);
    let l = lease("w1", 2, at(60));
    assert_eq!(
        guard::poll_apply(&row, &l, at(60)),
        Err(Refusal::LeaseExpired)
    );
    assert_eq!(
        guard::poll_apply(&row, &l, at(61)),
        Err(Refusal::LeaseExpired)
    );
}

#[test]
fn poll_guard_refuses_while_cancel_work_is_in_progress() {
    let mut row = leased_row(2, 60);
    row.cancel.requested_at = Some(at(5));
    row.cancel.status = CancelStatus::Requested;
    row.cancel.due_at = Some(at(5));
    assert_eq!(
        guard::poll_apply(&row, &lease("w1", 2, at(60)), at(1)),
        Err(Refusal::CancelRequested)
    );
    // Once the cancel work ended without a terminal snapshot (acknowledged or dead-lettered),
    // a poll claimed afterwards applies (ending it cleared every earlier poll lease).
    for ended in [CancelStatus::Done, CancelStatus::DeadLetter] {
        row.cancel.status = ended;
        row.cancel.due_at = None;
        assert_eq!(
            guard::poll_apply(&row, &lease("w1", 2, at(60)), at(1)),
            Ok(())
        );
    }
}

#[test]
fn poll_guard_refuses_a_terminal_task() {
    let mut row = leased_row(2, 60);
    row.remote.status = RemoteStatus::Completed;
    assert_eq!(
        guard::poll_apply(&row, &lease("w1", 2, at(60)), at(1)),
        Err(Refusal::Terminal)
    );
}

#[tokio::test]
async fn store_applies_a_poll_by_completion_time_and_refuses_stale_tokens_without_change() {
    let store = TestStore::new(policy());
    store.insert_task(fresh_row()).await.unwrap();
    let id = TaskId::from(TASK);
    let claim = |worker: &str, now| ClaimRequest {
        worker: worker.into(),
        now,
        lease_for: secs(60),
        limit: 10,
    };
    let first = store
        .claim(LeaseKind::Poll, claim("w1", T0))
        .await
        .unwrap()
        .remove(0);
    let update = |row: &TaskRow, status: &str, t| {
        on_report(
            row,
            validate(&report(REMOTE, status), &row.identity.handle),
            t,
            &policy(),
        )
    };
    // a result completed before expiry is applied even if written after it
    let w = PollWrite {
        task_id: id.clone(),
        lease: first.lease.clone(),
        completed_at: at(59),
        update: update(&first.row, "working", at(59)),
    };
    let out = store.apply_polls(vec![w], at(65)).await.unwrap();
    assert!(out[0].is_ok(), "{out:?}");
    let row = store.row(&id).await;
    assert_eq!(row.remote.status, RemoteStatus::Working);
    assert_eq!(row.poll.lease, None, "the write releases the lease");

    // claim twice by the same worker; the first token is stale
    assert!(store.row(&id).await.poll.lease.is_none());
    let a = store
        .claim(LeaseKind::Poll, claim("w1", at(100)))
        .await
        .unwrap()
        .remove(0);
    let b = store
        .claim(LeaseKind::Poll, claim("w1", at(160)))
        .await
        .unwrap()
        .remove(0);
    assert!(b.lease.token > a.lease.token);
    let before = store.row(&id).await;
    let stale = PollWrite {
        task_id: id.clone(),
        lease: a.lease.clone(),
        completed_at: at(161),
        update: update(&a.row, "completed", at(161)),
    };
    let out = store.apply_polls(vec![stale], at(161)).await.unwrap();
    assert_eq!(out, vec![Err(Refusal::LeaseNotHeld)]);
    assert_eq!(
        store.row(&id).await,
        before,
        "a refused write changes nothing"
    );
    // the current token, completed after its expiry, is refused too
    let late = PollWrite {
        task_id: id.clone(),
        lease: b.lease.clone(),
        completed_at: at(220),
        update: update(&b.row, "completed", at(220)),
    };
    assert_eq!(
        store.apply_polls(vec![late], at(220)).await.unwrap(),
        vec![Err(Refusal::LeaseExpired)]
    );
    assert_eq!(store.row(&id).await, before);
    assert_eq!(before.outbox.status, NotifyStatus::None);
}

#[tokio::test]
async fn poll_claims_take_due_pollable_uncancelled_free_rows_in_due_then_id_order() {
    let store = TestStore::new(policy());
    let mk = |task: &str, due: u64| {
        let mut row = new_row(identity(task, task), None, T0, &policy());
        row.poll.next_poll_at = Some(at(due));
        row
    };
    store.insert_task(mk("tsk_b", 10)).await.unwrap();
    store.insert_task(mk("tsk_a", 10)).await.unwrap();
    store.insert_task(mk("tsk_c", 5)).await.unwrap();
    store.insert_task(mk("tsk_later", 500)).await.unwrap();
    let mut done = mk("tsk_done", 1);
    done.remote.status = RemoteStatus::Completed;
    // A terminal row is never due (a rule of the row, asserted by the store); the claim would
    // skip it even if it were.
    assert!(!claimable(LeaseKind::Poll, &done, at(20)));
    done.poll.next_poll_at = None;
    store.insert_task(done).await.unwrap();
    store.insert_task(mk("tsk_cancel", 1)).await.unwrap();
    store
        .request_cancel(
            &scope(),
            &tasklatch_core::store::CancelTarget::Id("tsk_cancel".into()),
            at(1),
        )
        .await
        .unwrap();
    let req = |limit| ClaimRequest {
        worker: "w1".into(),
        now: at(20),
        lease_for: secs(60),
        limit,
    };
    let got: Vec<String> = store
        .claim(LeaseKind::Poll, req(2))
        .await
        .unwrap()
        .iter()
        .map(|c| c.row.id().to_string())
        .collect();
    assert_eq!(got, ["tsk_c", "tsk_a"], "due time, then id; batch limit");
    let got: Vec<String> = store
        .claim(LeaseKind::Poll, req(10))
        .await
        .unwrap()
        .iter()
        .map(|c| c.row.id().to_string())
        .collect();
    assert_eq!(
        got,
        ["tsk_b"],
        "leased rows are skipped; terminal, cancelled, not-due never"
    );
}

#[tokio::test]
async fn a_claim_limit_above_max_batch_is_invalid_and_claims_nothing() {
    let store = TestStore::new(policy());
    let id = TaskId::from("tsk_a");
    store
        .insert_task(new_row(identity("tsk_a", "a"), None, T0, &policy()))
        .await
        .unwrap();
    let req = |limit| ClaimRequest {
        worker: "w1".into(),
        now: at(0),
        lease_for: secs(60),
        limit,
    };
    for kind in LeaseKind::ALL {
        let refused = store.claim(kind, req(MAX_BATCH + 1)).await;
        assert!(
            matches!(refused, Err(StoreError::Invalid(_))),
            "{refused:?}"
        );
    }
    assert_eq!(store.row(&id).await.poll.claims, 0, "nothing was claimed");
    let claimed = store.claim(LeaseKind::Poll, req(MAX_BATCH)).await.unwrap();
    assert_eq!(claimed.len(), 1, "the limit itself is allowed");
}

#[test]
fn an_input_required_report_without_a_question_says_that_none_was_given() {
    for question in [None, Some(""), Some("  ")] {
        let r = RemoteReport {
            input_request: question.map(str::to_owned),
            ..report("rt-1", "input_required")
        };
        let observed = validate(&r, &handle("rt-1")).expect("a valid report");
        assert_eq!(
            observed.input_request.as_deref(),
            Some(NO_QUESTION),
            "{question:?}"
        );
    }
    let asked = RemoteReport {
        input_request: Some("which branch?".into()),
        ..report("rt-1", "input_required")
    };
    let observed = validate(&asked, &handle("rt-1")).expect("a valid report");
    assert_eq!(observed.input_request.as_deref(), Some("which branch?"));
    let working = validate(&report("rt-1", "working"), &handle("rt-1")).expect("valid");
    assert_eq!(working.input_request, None, "only input_required asks");
}
