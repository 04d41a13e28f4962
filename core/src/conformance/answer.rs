//! Answers to input requests: scoped, bounded, once per request, sent at most once under the
//! poll claim that marked the attempt.

use super::support::*;
use crate::lease::{LeaseKind, Refusal};
use crate::policy::MAX_ANSWER_BYTES;
use crate::secret::Secret;
use crate::status::{AnswerStatus, RemoteStatus};
use crate::store::*;
use crate::transitions::answer::AnswerAction;
use crate::transitions::poll;

/// The planted answer text: it must never show in a row's `Debug` output.
pub const PLANTED_ANSWER: &str = "ANSWER-SECRET-teal";

/// Inserts task `id` of alice in th1 and polls it at t(0) to `input_required`, asking `[q1]` and
/// `[q2]`.
pub async fn asking<S: Store>(s: &S, id: &str) {
    s.insert_task(submitted(id, t(0))).await.unwrap();
    poll_once(s, id, 0, |r| {
        let mut obs = observed(RemoteStatus::InputRequired);
        obs.input_request = Some("Answer each by id.\n[q1] Which colour?\n[q2] Size?".into());
        poll::on_report(r, Ok(obs), t(0), &policy())
    })
    .await
    .unwrap();
}

/// An answer request for `id`, question `q`.
pub fn answer_req(id: &str, q: &str, text: &str) -> AnswerRequest {
    AnswerRequest {
        task_id: id.into(),
        request_id: q.into(),
        text: Secret::new(text),
    }
}

/// Records alice's answer `text` to question `q` of task `id` at `t(at)`.
pub async fn ans<S: Store>(s: &S, id: &str, q: &str, text: &str, at: i64) -> AnswerOutcome {
    s.record_answer(&alice(), answer_req(id, q, text), t(at))
        .await
        .expect("record answer")
}

/// Writes `action` for the claim `c` at `now`; the write's outcome.
pub async fn finish<S: Store>(s: &S, c: &Claimed, action: AnswerAction, now: i64) -> WriteOutcome {
    s.finish_answers(
        vec![AnswerWrite {
            task_id: c.row.id().clone(),
            lease: c.lease.clone(),
            action,
        }],
        t(now),
    )
    .await
    .unwrap()
    .remove(0)
}

/// Only the owner, in the task's thread, may answer; the answer is bounded and well-formed,
/// names a question the latest report asks, and never shows in `Debug` output.
pub async fn answer_scope_bound_and_asked<S: Store>(s: &S) {
    asking(s, "a").await;
    let ok = answer_req("a", "q1", PLANTED_ANSWER);
    let other = |owner: &str, thread: &str| Scope {
        owner: owner.into(),
        thread: thread.into(),
    };
    for scope in [other("bob", "th1"), other("alice", "th2")] {
        let got = s.record_answer(&scope, ok.clone(), t(5)).await.unwrap();
        assert_eq!(got, AnswerOutcome::NotFound, "{scope:?}");
    }
    let missing = answer_req("zz", "q1", "x");
    let got = s.record_answer(&alice(), missing, t(5)).await.unwrap();
    assert_eq!(got, AnswerOutcome::NotFound);
    let big = "x".repeat(MAX_ANSWER_BYTES + 1);
    for (q, text) in [
        ("q1", big.as_str()),
        ("q1", ""),
        ("q 1", "x"),
        ("[q1]", "x"),
    ] {
        let got = s
            .record_answer(&alice(), answer_req("a", q, text), t(5))
            .await;
        assert!(matches!(got, Err(StoreError::Invalid(_))), "{q}: {got:?}");
    }
    let fits = answer_req("a", "q9", &"x".repeat(MAX_ANSWER_BYTES));
    let got = s.record_answer(&alice(), fits, t(5)).await.unwrap();
    assert_eq!(got, AnswerOutcome::NotAsked("a".into()), "q9 is not asked");
    assert_eq!(row(s, "a").await.answer.status, AnswerStatus::None);
    let got = s.record_answer(&alice(), ok, t(5)).await.unwrap();
    assert_eq!(got, AnswerOutcome::Recorded("a".into()));
    let r = row(s, "a").await;
    assert_eq!(r.answer.status, AnswerStatus::Pending);
    assert_eq!(r.answer.request_id.as_deref(), Some("q1"));
    assert_eq!(r.answer.recorded_at, Some(t(5)));
    assert_eq!(
        r.answer.text.as_ref().map(Secret::expose),
        Some(PLANTED_ANSWER)
    );
    assert!(r.poll.next_poll_at.is_some_and(|n| n <= t(5)), "due now");
    assert!(!format!("{r:?}").contains(PLANTED_ANSWER));
    // A task that does not ask (never polled) or whose cancel was requested refuses answers.
    s.insert_task(submitted("b", t(0))).await.unwrap();
    let got = s
        .record_answer(&alice(), answer_req("b", "q1", "x"), t(5))
        .await;
    assert_eq!(got.unwrap(), AnswerOutcome::NotAsked("b".into()));
    asking(s, "c").await;
    s.request_cancel(&alice(), &CancelTarget::Id("c".into()), t(6))
        .await
        .unwrap();
    let got = s
        .record_answer(&alice(), answer_req("c", "q1", "x"), t(7))
        .await;
    assert_eq!(got.unwrap(), AnswerOutcome::NotAsked("c".into()));
}

/// A second answer to the same request is refused, pending or sent; another question waits for
/// the pending answer to be sent.
pub async fn answer_second_refused<S: Store>(s: &S) {
    asking(s, "a").await;
    let first = ans(s, "a", "q1", "red", 5).await;
    assert_eq!(first, AnswerOutcome::Recorded("a".into()));
    let again = ans(s, "a", "q1", "blue", 6).await;
    assert_eq!(again, AnswerOutcome::AlreadyAnswered("a".into()));
    let other = ans(s, "a", "q2", "XL", 6).await;
    assert_eq!(other, AnswerOutcome::AnotherPending("a".into()));
    let r = row(s, "a").await;
    assert_eq!(r.answer.text.as_ref().map(Secret::expose), Some("red"));
    assert_eq!(r.answer.recorded_at, Some(t(5)));
    let c = claim(s, LeaseKind::Poll, "w", t(10), 10).await.remove(0);
    assert!(finish(s, &c, AnswerAction::Sent, 11).await.is_ok());
    let r = row(s, "a").await;
    assert_eq!(r.answer.status, AnswerStatus::Sent);
    assert_eq!(r.answer.text, None, "the text is dropped once sent");
    let again = ans(s, "a", "q1", "blue", 12).await;
    assert_eq!(again, AnswerOutcome::AlreadyAnswered("a".into()));
    let other = ans(s, "a", "q2", "XL", 12).await;
    assert_eq!(other, AnswerOutcome::Recorded("a".into()));
}

/// The outcome is written only under the poll claim that marked the attempt: another token, an
/// expired lease or a second outcome are refused.
pub async fn answer_stale_lease_refused<S: Store>(s: &S) {
    asking(s, "a").await;
    s.record_answer(&alice(), answer_req("a", "q1", "red"), t(5))
        .await
        .unwrap();
    let c = claim(s, LeaseKind::Poll, "w", t(10), 10).await.remove(0);
    assert_eq!(c.row.answer.status, AnswerStatus::Sending);
    assert_eq!(c.row.answer.attempt_token, Some(c.lease.token));
    assert_eq!(c.row.answer.text.as_ref().map(Secret::expose), Some("red"));
    let mut stale = c.clone();
    stale.lease = with_token(&c.lease, c.lease.token.0 + 1);
    let got = finish(s, &stale, AnswerAction::Sent, 11).await;
    assert_eq!(got, Err(Refusal::LeaseNotHeld));
    let got = finish(s, &c, AnswerAction::Sent, 70).await;
    assert_eq!(got, Err(Refusal::LeaseExpired));
    let missing = AnswerWrite {
        task_id: "zz".into(),
        lease: c.lease.clone(),
        action: AnswerAction::Sent,
    };
    let got = s.finish_answers(vec![missing], t(11)).await.unwrap();
    assert_eq!(got, vec![Err(Refusal::NoSuchTask)]);
    assert_eq!(row(s, "a").await.answer.status, AnswerStatus::Sending);
    let got = finish(s, &c, AnswerAction::Failed("no such question".into()), 11).await;
    assert!(got.is_ok(), "{got:?}");
    let r = row(s, "a").await;
    assert_eq!(r.answer.status, AnswerStatus::Failed);
    assert_eq!(r.answer.error.as_deref(), Some("no such question"));
    assert_eq!(r.answer.text, None);
    assert_eq!(
        r.poll.lease.as_ref(),
        Some(&c.lease),
        "the poll lease stays"
    );
    let got = finish(s, &c, AnswerAction::Sent, 12).await;
    assert_eq!(got, Err(Refusal::LeaseNotHeld), "one outcome per attempt");
}

/// At most once: an attempt whose claim wrote no outcome becomes `unconfirmed` at the next poll
/// claim and is never marked for sending again; a claim that made no call puts it back.
pub async fn answer_at_most_once<S: Store>(s: &S) {
    asking(s, "a").await;
    s.record_answer(&alice(), answer_req("a", "q1", "red"), t(5))
        .await
        .unwrap();
    // A claim that makes no call gives the attempt back: the next claim marks it again.
    let c0 = claim(s, LeaseKind::Poll, "w", t(5), 10).await.remove(0);
    assert!(finish(s, &c0, AnswerAction::NotSent, 6).await.is_ok());
    assert_eq!(row(s, "a").await.answer.status, AnswerStatus::Pending);
    // The claim after the lease expired marks it; then the worker "crashes".
    let c1 = claim(s, LeaseKind::Poll, "w", t(70), 10).await.remove(0);
    assert_eq!(c1.row.answer.status, AnswerStatus::Sending);
    assert_eq!(c1.row.answer.attempt_token, Some(c1.lease.token));
    // Its lease expires without an outcome: the next claim never re-sends.
    let c2 = claim(s, LeaseKind::Poll, "v", t(200), 10).await.remove(0);
    assert_eq!(c2.row.answer.status, AnswerStatus::Unconfirmed);
    assert_eq!(c2.row.answer.text, None, "the text is gone");
    assert_eq!(c2.row.answer.attempt_token, Some(c1.lease.token));
    assert!(c2.row.answer.error.is_some());
    let got = finish(s, &c2, AnswerAction::Sent, 201).await;
    assert_eq!(got, Err(Refusal::LeaseNotHeld), "not this claim's attempt");
    let got = finish(s, &c1, AnswerAction::Sent, 201).await;
    assert_eq!(
        got,
        Err(Refusal::LeaseNotHeld),
        "the old claim lost its lease"
    );
    let r = row(s, "a").await;
    assert_eq!(r.answer.status, AnswerStatus::Unconfirmed);
    let again = ans(s, "a", "q1", "red", 202).await;
    assert_eq!(again, AnswerOutcome::AlreadyAnswered("a".into()));
    // A timeout is unconfirmed too.
    let other = ans(s, "a", "q2", "XL", 300).await;
    assert_eq!(other, AnswerOutcome::Recorded("a".into()));
    let c3 = claim(s, LeaseKind::Poll, "w", t(400), 10).await.remove(0);
    let got = finish(s, &c3, AnswerAction::Unconfirmed("timeout".into()), 401).await;
    assert!(got.is_ok());
    let r = row(s, "a").await;
    assert_eq!(r.answer.status, AnswerStatus::Unconfirmed);
    assert_eq!(r.answer.error.as_deref(), Some("timeout"));
}

/// Once per question of the current input request, whatever was answered in between: q1 sent,
/// q2 sent, then q1 again is refused; so is q1 after q2's attempt ended unconfirmed. The row
/// remembers both ids, oldest first.
pub async fn answer_earlier_question_refused_after_another<S: Store>(s: &S) {
    asking(s, "a").await;
    assert_eq!(
        ans(s, "a", "q1", "red", 5).await,
        AnswerOutcome::Recorded("a".into())
    );
    let c = claim(s, LeaseKind::Poll, "w", t(10), 10).await.remove(0);
    assert!(finish(s, &c, AnswerAction::Sent, 11).await.is_ok());
    assert_eq!(
        ans(s, "a", "q2", "XL", 12).await,
        AnswerOutcome::Recorded("a".into())
    );
    let c = claim(s, LeaseKind::Poll, "w", t(80), 10).await.remove(0);
    let got = finish(s, &c, AnswerAction::Unconfirmed("timeout".into()), 81).await;
    assert!(got.is_ok(), "{got:?}");
    let again = ans(s, "a", "q1", "blue", 82).await;
    assert_eq!(
        again,
        AnswerOutcome::AlreadyAnswered("a".into()),
        "q1 again"
    );
    let again = ans(s, "a", "q2", "S", 82).await;
    assert_eq!(
        again,
        AnswerOutcome::AlreadyAnswered("a".into()),
        "q2 again"
    );
    let r = row(s, "a").await;
    assert_eq!(r.answer.answered, vec!["q1".to_owned(), "q2".to_owned()]);
    assert_eq!(r.answer.request_id.as_deref(), Some("q2"));
    assert_eq!(r.answer.status, AnswerStatus::Unconfirmed);
}
