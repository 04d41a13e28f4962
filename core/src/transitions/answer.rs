//! Answers to input requests: the user's answer is recorded on the row, and the
//! poll loop sends it at most once, riding its poll claim.
//!
//! A task that needs input names each open question in its input request as `[id]`, with an id
//! of 1 to [`MAX_REQUEST_ID`] characters from `[A-Za-z0-9_-]` (the MCP driver writes
//! `[q<16 hex>]`). An answer is accepted only while the task is `input_required`, no cancel was
//! requested and its latest report names that id; a second answer to any request the row
//! remembers as answered ([`crate::task::AnswerState::answered`]: every answered id the current
//! input request still names, not only the latest) is refused, and so is an answer while
//! another one waits to be sent. The row remembers at most [`MAX_ANSWERED_REQUESTS`] ids; at
//! that limit every further answer is refused as already answered (never sent twice).
//!
//! Sending is at most once. The poll claim marks the attempt (`pending` → `sending`, with the
//! claim's token) before the remote call; the outcome is written under the same poll lease
//! ([`apply`]). If no outcome arrives (the worker crashed, lost its lease, or its write failed),
//! the next poll claim turns the attempt `unconfirmed` and it is never sent again: the user
//! sees "unconfirmed", and the task's next report tells whether the server got it (a task
//! still asking the same question did not; that question can then only be cancelled). The
//! answer text is dropped from the row as soon as an attempt has an outcome.

use crate::invariants::debug_check_row;
use crate::lease::LeaseToken;
use crate::mutation::{self, planted, Mutant};
use crate::policy::{stored_error, MAX_ANSWERED_REQUESTS, MAX_ANSWER_BYTES, MAX_REQUEST_ID};
use crate::secret::Secret;
use crate::status::{AnswerStatus, RemoteStatus};
use crate::task::TaskRow;
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

/// What recording an answer found.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum RecordResult {
    /// Recorded: the task is due for a poll now, which sends it.
    Recorded,
    /// The task does not ask for this request now (not `input_required`, cancel requested,
    /// terminal, or its latest report does not name the id).
    NotAsked,
    /// This request was already answered: nothing changed.
    AlreadyAnswered,
    /// Another answer of this task waits to be sent: nothing changed.
    AnotherPending,
}

/// Whether `id` is a well-formed request id.
pub fn valid_request_id(id: &str) -> bool {
    !id.is_empty()
        && id.chars().count() <= MAX_REQUEST_ID
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Whether `input_request` (the latest report's text) names the well-formed request `id`.
pub fn asks_for(input_request: Option<&str>, id: &str) -> bool {
    valid_request_id(id) && input_request.is_some_and(|text| text.contains(&format!("[{id}]")))
}

/// Checks an answer's shape before any row is looked at: a well-formed request id and a
/// non-empty text of at most [`MAX_ANSWER_BYTES`] bytes without NUL.
pub fn validate(request_id: &str, text: &str) -> Result<(), crate::store::StoreError> {
    use crate::store::StoreError::Invalid;
    if !valid_request_id(request_id) {
        return Err(Invalid(format!(
            "a request id is 1 to {MAX_REQUEST_ID} characters of A-Z, a-z, 0-9, _ and -"
        )));
    }
    if text.is_empty() || text.len() > MAX_ANSWER_BYTES || text.contains('\0') {
        return Err(Invalid(format!(
            "an answer is 1 to {MAX_ANSWER_BYTES} bytes, without NUL"
        )));
    }
    Ok(())
}

/// Records the user's answer to `request_id` at `now` ([`validate`] first). The row changes
/// only when the result is [`RecordResult::Recorded`]; then the poll is due now (no later than
/// it was), so the answer does not wait out the input-required poll floor.
pub fn record(row: &mut TaskRow, request_id: &str, text: &str, now: Timestamp) -> RecordResult {
    let result = record_answer(row, request_id, text, now);
    debug_check_row(row);
    result
}

fn record_answer(row: &mut TaskRow, request_id: &str, text: &str, now: Timestamp) -> RecordResult {
    let asked = asks_for(row.remote.input_request.as_deref(), request_id);
    let asked = mutation::substitute(Mutant::AnswerRecordedWhenNotAsked, asked, |_| true);
    if row.remote.status != RemoteStatus::InputRequired
        || row.cancel.requested_at.is_some()
        || !asked
    {
        return RecordResult::NotAsked;
    }
    let answered = still_asked(&row.answer.answered, row.remote.input_request.as_deref());
    let mut answered = mutation::substitute(
        Mutant::AnsweredSetKeepsLatestOnly,
        answered,
        planted::latest_only,
    );
    if answered.iter().any(|id| id == request_id) || answered.len() >= MAX_ANSWERED_REQUESTS {
        return RecordResult::AlreadyAnswered;
    }
    if matches!(
        row.answer.status,
        AnswerStatus::Pending | AnswerStatus::Sending
    ) {
        return RecordResult::AnotherPending;
    }
    answered.push(request_id.to_owned());
    row.answer.answered = answered;
    row.answer.request_id = Some(request_id.to_owned());
    row.answer.text = Some(Secret::new(text));
    row.answer.status = AnswerStatus::Pending;
    row.answer.recorded_at = Some(now);
    row.answer.attempt_token = None;
    row.answer.error = None;
    row.poll.next_poll_at = row.poll.next_poll_at.map(|t| t.min(now));
    RecordResult::Recorded
}

/// The ids of `answered` that `input_request` still names, in their order: the answered ids of
/// the current input request (an id the server stopped asking is forgotten).
fn still_asked(answered: &[String], input_request: Option<&str>) -> Vec<String> {
    answered
        .iter()
        .filter(|id| asks_for(input_request, id))
        .cloned()
        .collect()
}

/// What the poll claim with `token` does to the answer (called inside every poll claim): a
/// pending answer is marked as this claim's attempt; an attempt of an earlier claim that never
/// wrote its outcome becomes `unconfirmed`, never pending again.
pub fn on_poll_claim(row: &mut TaskRow, token: LeaseToken) {
    let status = mutation::substitute(
        Mutant::AnswerResentWhenUnconfirmed,
        row.answer.status,
        planted::sending_resent,
    );
    match status {
        AnswerStatus::Pending => {
            row.answer.status = AnswerStatus::Sending;
            row.answer.attempt_token = Some(token);
        }
        AnswerStatus::Sending => {
            row.answer.status = AnswerStatus::Unconfirmed;
            row.answer.text = None;
            row.answer.error = Some(UNCONFIRMED.into());
        }
        _ => {}
    }
}

/// Why an attempt is unconfirmed when its claim never wrote an outcome.
pub const UNCONFIRMED: &str = "the attempt to send the answer ended without an outcome";

/// Whether the claim with `token` must send the row's answer.
pub fn to_send(row: &TaskRow, token: LeaseToken) -> bool {
    row.answer.status == AnswerStatus::Sending && row.answer.attempt_token == Some(token)
}

/// The outcome of one attempt, written under the poll lease that marked it.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum AnswerAction {
    /// The driver confirmed the server accepted the answer.
    Sent,
    /// The call may or may not have reached the server (timeout, connection lost).
    Unconfirmed(String),
    /// The driver or the server refused the answer; nothing was accepted.
    Failed(String),
    /// The claim made no call (shutdown, lease too short): the answer is pending again.
    NotSent,
}

/// Applies a guarded answer outcome ([`crate::transitions::guard::answer_write`]). The poll
/// lease is kept: the claim goes on to poll.
pub fn apply(row: &mut TaskRow, action: AnswerAction) {
    let a = &mut row.answer;
    match action {
        AnswerAction::Sent => {
            a.status = AnswerStatus::Sent;
            a.text = None;
        }
        AnswerAction::Unconfirmed(e) => {
            a.status = AnswerStatus::Unconfirmed;
            a.text = None;
            a.error = Some(stored_error(&e));
        }
        AnswerAction::Failed(e) => {
            a.status = AnswerStatus::Failed;
            a.text = None;
            a.error = Some(stored_error(&e));
        }
        AnswerAction::NotSent => {
            a.status = AnswerStatus::Pending;
            a.attempt_token = None;
        }
    }
    debug_check_row(row);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::test_support::row;

    fn asking(questions: usize) -> TaskRow {
        let mut r = row("t1", "task", RemoteStatus::InputRequired, 1_000);
        let ids: String = (0..questions).map(|i| format!("[q{i}] ?\n")).collect();
        r.remote.input_request = Some(ids);
        r
    }

    fn answer_and_settle(r: &mut TaskRow, id: &str, outcome: AnswerAction) -> RecordResult {
        let got = record(r, id, "x", Timestamp::from_micros(2_000));
        if got == RecordResult::Recorded {
            on_poll_claim(r, LeaseToken(1));
            apply(r, outcome);
        }
        got
    }

    /// qA, qB, then qA again: the second qA is refused (after qB was sent, and after qB's
    /// attempt ended unconfirmed), so it is never marked for sending again.
    #[test]
    fn earlier_question_refused_after_another() {
        for q_b in [AnswerAction::Sent, AnswerAction::Unconfirmed("lost".into())] {
            let mut r = asking(2);
            assert_eq!(
                answer_and_settle(&mut r, "q0", AnswerAction::Sent),
                RecordResult::Recorded
            );
            assert_eq!(answer_and_settle(&mut r, "q1", q_b), RecordResult::Recorded);
            let before = r.clone();
            let got = answer_and_settle(&mut r, "q0", AnswerAction::Sent);
            assert_eq!(got, RecordResult::AlreadyAnswered);
            assert_eq!(r, before, "nothing changed");
            on_poll_claim(&mut r, LeaseToken(2));
            assert!(!to_send(&r, LeaseToken(2)), "nothing to send");
        }
    }

    /// At [`MAX_ANSWERED_REQUESTS`] remembered ids every further answer is refused; an id the
    /// input request no longer names is forgotten.
    #[test]
    fn answered_set_is_bounded_to_the_current_request() {
        let mut r = asking(MAX_ANSWERED_REQUESTS + 1);
        for i in 0..MAX_ANSWERED_REQUESTS {
            let got = answer_and_settle(&mut r, &format!("q{i}"), AnswerAction::Sent);
            assert_eq!(got, RecordResult::Recorded, "q{i}");
        }
        let last = format!("q{MAX_ANSWERED_REQUESTS}");
        let got = answer_and_settle(&mut r, &last, AnswerAction::Sent);
        assert_eq!(got, RecordResult::AlreadyAnswered, "at the limit");
        r.remote.input_request = Some(format!("[{last}] ?"));
        let got = answer_and_settle(&mut r, &last, AnswerAction::Sent);
        assert_eq!(got, RecordResult::Recorded, "a new request");
        assert_eq!(r.answer.answered, vec![last]);
    }
}
