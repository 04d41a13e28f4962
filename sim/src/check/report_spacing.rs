//! Poll spacing judged per report (DOMAIN §4, issue 29 item 1), seen from the remote server:
//! after a successful, non-terminal report reached the engine, the next poll is due after the
//! delay that report calls for — the server's hint, else the poll interval; at least
//! [`INPUT_REQUIRED_FLOOR`] for `input_required`; never under [`MIN_POLL_DELAY`] — and the
//! schedule is kept both ways:
//!
//! - **not late** ([`Invariant::Live`]): the server hears about the task again within that
//!   delay plus a pass and slack, plus what the faults active meanwhile add (as in
//!   [`super::spacing`]). The policy-wide bound there allows the longest delay of all (the
//!   `input_required` floor); a `working` task left unpolled three times its interval passes
//!   it, and fails here. A repeated cancel request after the cancel work ended must not pause
//!   polling: this is the rule that sees it.
//! - **not early** ([`Invariant::Noisy`]): the next poll does not come before the delay, less
//!   [`EARLY_SLACK`] — unless a fault, an answer (which may bring the next poll forward) or the
//!   end of cancel work fell inside the gap.
//!
//! A gap opens at a poll's report, and at a cancel's non-terminal report (an acknowledgement,
//! which ends the cancel work and is applied like a poll's). Only reports the engine received
//! are judged (a dropped reply, or one served after its caller gave up, is not), only remote tasks
//! held by one stored task (two rows polling one handle interleave), and never a gap in which
//! a first cancel request may have paused polling: polling stands still until the cancel work
//! ends, and then resumes no earlier than the voided poll lease's expiry (one lease more).

use super::disturbances::Disturbances;
use super::facts::Facts;
use super::{Invariant, Verdict};
use crate::history::write_action::WriteAction;
use crate::history::{RemoteOp, Seen};
use crate::plan::naming::task_label;
use crate::plan::timing::{sim_policy, PASS_INTERVAL};
use crate::wire::mcp::McpAnswer;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use tasklatch_core::lease::LeaseKind;
use tasklatch_core::policy::INPUT_REQUIRED_FLOOR;
use tasklatch_core::snapshot::validate;
use tasklatch_core::status::RemoteStatus;
use tasklatch_core::store::AnswerOutcome;
use tasklatch_core::transitions::poll::MIN_POLL_DELAY;

/// Slack on the late side: call latency, store round trips and a pass's own calls.
const LATE_SLACK: Duration = Duration::from_secs(12);

/// Slack on the early side: the clocks of two workers may disagree by up to the policy's
/// `max_clock_skew` without a fault, and the store's time is read once per pass.
const EARLY_SLACK: Duration = Duration::from_secs(2);

/// An open gap: the last judged report about a remote task, and what happened since.
struct Gap {
    /// When the server served the report.
    at_us: u64,
    /// The delay the report calls for.
    delay_us: u64,
    /// The report's status, for the verdict's text.
    status: RemoteStatus,
    /// A first cancel request may have paused polling inside the gap: not judged.
    cancel_pending: bool,
    /// Cancel work ended inside the gap: one lease later, and never judged early.
    cancel_ended: bool,
    /// An owner's answer was waiting to be sent inside the gap: the next poll may come early
    /// (a recorded answer brings it forward).
    answered: bool,
}

/// The walk's state.
#[derive(Default)]
struct Walk<'a> {
    /// Remote id → its open gap.
    open: BTreeMap<&'a str, Gap>,
    /// Remote id → (time, call, answer) of the server's last answer to a poll or a cancel,
    /// until a worker's port reports getting it.
    served: BTreeMap<&'a str, (u64, RemoteOp, &'a McpAnswer)>,
    /// Task numbers with a cancel request sent.
    cancel_sent: BTreeSet<u32>,
    /// Task numbers whose cancel work ended.
    cancel_done: BTreeSet<u32>,
    /// Task numbers with an answer recorded (or maybe recorded) that may wait to be sent on to
    /// the server.
    answer_waiting: BTreeSet<u32>,
}

pub(super) fn check(f: &Facts<'_>, v: &mut Verdict) {
    let lease_us = micros(sim_policy().poll_lease);
    let disturbances = Disturbances::of_lingering(f, lease_us, |kind| kind.excuse().polls);
    let mut walk = Walk::default();
    for (i, e) in f.entries.iter().enumerate() {
        match &e.event {
            Seen::RemoteServed {
                remote_id,
                op,
                answer,
                dropped,
            } => {
                if let Some(gap) = walk.open.remove(remote_id.as_str()) {
                    judge(f, v, i, &gap, (e.at_us, *op), &disturbances, lease_us);
                }
                walk.served.remove(remote_id.as_str());
                let reports = matches!(op, RemoteOp::Status | RemoteOp::Cancel);
                if reports && !*dropped && f.held_alone(remote_id) {
                    walk.served.insert(remote_id, (e.at_us, *op, answer));
                }
            }
            Seen::PortRemote {
                remote_id,
                op,
                started_us,
                answered: true,
                ..
            } => walk.received(f, remote_id, *op, *started_us),
            event => walk.observe(f, event),
        }
    }
}

impl<'a> Walk<'a> {
    /// Notes what a user or the store did about a task.
    fn observe(&mut self, f: &Facts<'a>, event: &Seen) {
        match event {
            Seen::CancelSent { n, .. } => {
                self.cancel_sent.insert(*n);
                let pending = !self.cancel_done.contains(n);
                self.touch(f, *n, |g| g.cancel_pending |= pending);
            }
            Seen::AnswerSent { n, .. } => self.touch(f, *n, |g| g.answered = true),
            // Recorded, or maybe recorded (the user saw no outcome): it waits to be sent.
            Seen::AnswerAnswered {
                n,
                answer: Ok(AnswerOutcome::Recorded(_)) | Err(_),
                ..
            } => {
                self.answer_waiting.insert(*n);
            }
            Seen::StoreWrite { lease, rows, .. } => {
                for r in rows.iter().filter(|r| r.outcome.is_ok()) {
                    let Some(&n) = f.n_of.get(r.task_id.as_str()) else {
                        continue;
                    };
                    // A held-back answer (`AnswerNotSent`) waits to be sent again.
                    let answer_settled = matches!(
                        r.action,
                        WriteAction::AnswerSent
                            | WriteAction::AnswerUnconfirmed
                            | WriteAction::AnswerFailed
                    );
                    if *lease == LeaseKind::Poll && answer_settled {
                        self.answer_waiting.remove(&n);
                    }
                    if *lease == LeaseKind::Cancel && r.action.ends_cancel() {
                        self.cancel_done.insert(n);
                        self.touch(f, n, |g| g.cancel_ended = true);
                    }
                }
            }
            _ => {}
        }
    }

    /// A worker's poll of `remote_id`, started at `started_us`, got its answer: opens a gap
    /// when the server's last answer to a poll of it is a judged report served meanwhile (an
    /// answer served after its caller gave up is no report the engine received).
    ///
    /// A cancel answered with a non-terminal report ends the cancel work (acknowledged): the
    /// report is applied like a poll's, and polling resumes one voided poll lease later at most.
    fn received(&mut self, f: &Facts<'a>, remote_id: &str, op: RemoteOp, started_us: u64) {
        let Some((remote_id, (at_us, served_op, answer))) = self.served.remove_entry(remote_id)
        else {
            return;
        };
        let Some(&n) = f.n_of_remote.get(remote_id) else {
            return;
        };
        if at_us < started_us || served_op != op {
            return;
        }
        let Some((status, delay)) = due_after(f, n, answer) else {
            return;
        };
        let acknowledged = op == RemoteOp::Cancel;
        let cancel_pending =
            !acknowledged && self.cancel_sent.contains(&n) && !self.cancel_done.contains(&n);
        let mut gap = Gap::new(at_us, delay, status, cancel_pending);
        gap.cancel_ended = acknowledged;
        gap.answered = self.answer_waiting.contains(&n);
        self.open.insert(remote_id, gap);
    }

    /// Applies `mark` to the open gap of task `n`'s remote task, if any.
    fn touch(&mut self, f: &Facts<'a>, n: u32, mark: impl FnOnce(&mut Gap)) {
        if let Some(gap) = f.held.get(&n).and_then(|r| self.open.get_mut(r)) {
            mark(gap);
        }
    }
}

impl Gap {
    fn new(at_us: u64, delay: Duration, status: RemoteStatus, cancel_pending: bool) -> Self {
        Gap {
            at_us,
            delay_us: micros(delay),
            status,
            cancel_pending,
            cancel_ended: false,
            answered: false,
        }
    }
}

/// The status of a successful, non-terminal report in `answer` and the delay it calls for;
/// `None` for anything else (errors, protocol errors, terminal reports).
fn due_after(f: &Facts<'_>, n: u32, answer: &McpAnswer) -> Option<(RemoteStatus, Duration)> {
    let McpAnswer::Report(wire) = answer else {
        return None;
    };
    let observed = validate(&wire.decode(), &f.handle(n)?).ok()?;
    if observed.status.is_terminal() {
        return None;
    }
    let mut delay = observed
        .poll_hint
        .unwrap_or(sim_policy().poll_interval)
        .max(MIN_POLL_DELAY);
    if observed.status == RemoteStatus::InputRequired {
        delay = delay.max(INPUT_REQUIRED_FLOOR);
    }
    Some((observed.status, delay))
}

/// Judges the gap that ended when the server took the call `(at_us, op)` (history entry `i`).
fn judge(
    f: &Facts<'_>,
    v: &mut Verdict,
    i: usize,
    gap: &Gap,
    (at_us, op): (u64, RemoteOp),
    disturbances: &Disturbances,
    lease_us: u64,
) {
    if gap.cancel_pending {
        return;
    }
    let waited_us = at_us.saturating_sub(gap.at_us);
    let extra_us = disturbances.extra(gap.at_us, at_us);
    let ended_us = if gap.cancel_ended { lease_us } else { 0 };
    let late_us = gap.delay_us + micros(PASS_INTERVAL + LATE_SLACK) + extra_us + ended_us;
    let label = label_of(f, i);
    if waited_us > late_us {
        let text = format!(
            "the server reported `{}` (next poll due in {} ms) and heard nothing more about the \
             task for {} ms (the report and the faults meanwhile allow {} ms)",
            gap.status.as_str(),
            gap.delay_us / 1_000,
            waited_us / 1_000,
            late_us / 1_000
        );
        v.push(Invariant::Live, label, Some(i), text);
        return;
    }
    let early_ok = gap.answered || gap.cancel_ended || extra_us > 0 || op != RemoteOp::Status;
    if !early_ok && waited_us + micros(EARLY_SLACK) < gap.delay_us {
        let text = format!(
            "the server reported `{}` (next poll due in {} ms) and was polled again {} ms later",
            gap.status.as_str(),
            gap.delay_us / 1_000,
            waited_us / 1_000
        );
        v.push(Invariant::Noisy, label, Some(i), text);
    }
}

/// The label of the task whose remote task served history entry `i`.
fn label_of(f: &Facts<'_>, i: usize) -> Option<String> {
    match &f.entries[i].event {
        Seen::RemoteServed { remote_id, .. } => f
            .n_of_remote
            .get(remote_id.as_str())
            .map(|n| task_label(*n)),
        _ => None,
    }
}

fn micros(d: Duration) -> u64 {
    d.as_micros() as u64
}

#[cfg(test)]
mod tests {
    use crate::check::test_support::{at, stored_task};
    use crate::check::{check, Invariant};
    use crate::history::write_action::WriteAction;
    use crate::history::{Entry, RemoteOp, RowWrite, Seen};
    use crate::plan::generate::{generate, Knobs};
    use crate::wire::mcp::{McpAnswer, WireReport};
    use tasklatch_core::lease::LeaseKind;
    use tasklatch_core::status::NotifyStatus;

    /// The server serving a poll `status` at `secs`, and the worker getting it.
    fn served(secs: u64, status: &str) -> Vec<Entry> {
        let report = WireReport {
            task_id: "r1".into(),
            status: status.into(),
            hint: None,
            result: None,
            artifact: None,
            error: None,
            input_request: None,
        };
        let event = Seen::RemoteServed {
            remote_id: "r1".into(),
            op: RemoteOp::Status,
            answer: McpAnswer::Report(report),
            dropped: false,
        };
        let received = Seen::PortRemote {
            lane: "worker-0/0".into(),
            remote_id: "r1".into(),
            op: RemoteOp::Status,
            started_us: secs * 1_000_000,
            answered: true,
        };
        vec![at(secs, "mcp", event), at(secs, "worker-0", received)]
    }

    fn cancel_sent(secs: u64, n: u32) -> Entry {
        let by = "owner-0".into();
        at(secs, "user", Seen::CancelSent { n, by, session: 0 })
    }

    fn cancel_acknowledged(secs: u64) -> Entry {
        let row = RowWrite {
            task_id: "t1".into(),
            token: 1,
            version: None,
            at_us: 0,
            action: WriteAction::CancelAcknowledged,
            outcome: Ok((0, 0, NotifyStatus::None)),
        };
        let event = Seen::StoreWrite {
            lease: LeaseKind::Cancel,
            rows: vec![row],
            dropped: false,
        };
        at(secs, "db", event)
    }

    fn answer_sent(secs: u64, n: u32) -> Entry {
        let event = Seen::AnswerSent {
            n,
            by: "owner-0".into(),
            request_id: "q1".into(),
            text: "yes".into(),
        };
        at(secs, "user", event)
    }

    /// A fault-free run of one stored task: `before(n)`, then the server's reports `polls`
    /// (seconds, status) with `between(n)` after the first. The verdicts of this rule.
    fn verdicts(
        polls: &[(u64, &str)],
        before: impl Fn(u32) -> Vec<Entry>,
        between: impl Fn(u32) -> Vec<Entry>,
    ) -> Vec<(Invariant, String)> {
        let mut plan = generate(0, &Knobs::default());
        plan.faults.clear();
        let n = plan.tasks[0].n;
        let mut entries = stored_task(n);
        entries.extend(before(n));
        for (k, (secs, status)) in polls.iter().enumerate() {
            entries.extend(served(*secs, status));
            if k == 0 {
                entries.extend(between(n));
            }
        }
        check(&plan, &entries)
            .violations
            .into_iter()
            .filter(|v| v.detail.contains("next poll due"))
            .map(|v| (v.invariant, v.detail))
            .collect()
    }

    fn nothing(_: u32) -> Vec<Entry> {
        Vec::new()
    }

    #[test]
    fn a_working_task_polled_on_schedule_passes() {
        let polls = [(0, "working"), (6, "working"), (12, "working")];
        assert!(verdicts(&polls, nothing, nothing).is_empty());
    }

    #[test]
    fn a_working_task_left_unpolled_beyond_its_interval_is_late() {
        let found = verdicts(&[(0, "working"), (45, "working")], nothing, nothing);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, Invariant::Live);
        assert!(found[0].1.contains("for 45000 ms"), "{found:?}");
    }

    #[test]
    fn a_task_waiting_for_input_polled_before_the_floor_is_noisy_unless_answered() {
        let polls = [(0, "input_required"), (5, "input_required")];
        let found = verdicts(&polls, nothing, nothing);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, Invariant::Noisy);
        let answered = verdicts(&polls, nothing, |n| vec![answer_sent(2, n)]);
        assert!(answered.is_empty(), "{answered:?}");
    }

    #[test]
    fn a_first_cancel_request_excuses_the_gap_but_a_repeat_after_the_work_ended_does_not() {
        let polls = [(2, "working"), (45, "working")];
        let first = verdicts(&polls, nothing, |n| vec![cancel_sent(3, n)]);
        assert!(first.is_empty(), "{first:?}");
        let ended = |n| vec![cancel_sent(0, n), cancel_acknowledged(1)];
        let repeat = verdicts(&polls, ended, |n| vec![cancel_sent(3, n)]);
        assert_eq!(repeat.len(), 1, "{repeat:?}");
        assert_eq!(repeat[0].0, Invariant::Live);
    }
}
