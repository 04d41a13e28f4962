//! The deviations of the planted bugs that need logic, as pure functions.
//!
//! Each function takes the value the correct code computed (and what it needs to read) and
//! returns the value the planted bug puts in its place; a site hands it to
//! [`super::substitute`], so none of this runs unless its [`super::Mutant`] is active (and none
//! of it runs at all without the `mutations` feature). Nothing here has a side effect.

use crate::engine::{ClockCheck, HandleWrite, Owed, CANCEL_ATTEMPTS};
use crate::event::{Event, Fingerprint};
use crate::ids::{OwnerId, RunId};
use crate::lease::Lease;
use crate::ports::RunStatus;
use crate::reconcile::Decision;
use crate::redaction::{MIN_REDACTABLE, PLACEHOLDER};
use crate::status::{AnswerStatus, CancelStatus, DeadLetterReason, NotifyStatus, RemoteStatus};
use crate::task::{Outbox, TaskRow};
use crate::time::Timestamp;
use crate::transitions::cancel::RequestResult;
use crate::transitions::outbox::{NotifyAction, Recorded};

/// `n + 1`: one more counted (a failure, an attempt) where the correct code counts none.
pub(crate) fn one_more(n: u32) -> u32 {
    n + 1
}

/// [`super::Mutant::VersionBumpWithoutChange`]: an unchanged record (`version`, whatever was
/// recorded) becomes a new version `version + 1`, reported as such.
pub(crate) fn bumped_anyway((version, _): (u64, Recorded)) -> (u64, Recorded) {
    let bumped = version + 1;
    (bumped, Recorded::NewVersion(bumped))
}

/// [`super::Mutant::SecondDegradationSuppressed`]: the fingerprint `o` keeps when its event
/// clears — its current one when it holds the latch of a degradation (a degraded event, or a
/// fingerprint without an event), else none as in the correct code.
pub(crate) fn degradation_latch(o: &Outbox) -> Option<Fingerprint> {
    let latched = o
        .event
        .as_ref()
        .map_or(o.fingerprint.is_some(), |e| e.tracking_degraded);
    o.fingerprint.clone().filter(|_| latched)
}

/// [`super::Mutant::DeadLetterNotRevived`]: whether a new version finds the channel busy (no
/// reopening) — `busy` as the correct code found it, or dead-lettered.
pub(crate) fn dead_letter_stays(busy: bool, status: NotifyStatus) -> bool {
    busy || status == NotifyStatus::DeadLetter
}

/// [`super::Mutant::InFlightSnapshotOverwritten`]: the frozen snapshot (version, event) of a
/// dispatch in flight replaced by `o`'s latest version and event.
pub(crate) fn latest_as_frozen(o: &Outbox) -> (u64, Option<Event>) {
    (o.event_version, o.event.clone())
}

/// [`super::Mutant::BusyDeliversStaleSnapshot`]: after a 409 the frozen snapshot (version,
/// event) is kept, relabelled as `o`'s latest version.
pub(crate) fn stale_snapshot(o: &Outbox) -> (u64, Option<Event>) {
    (o.event_version, o.dispatch_event.clone())
}

/// [`super::Mutant::ThreadGoneRetried`]: a 404 thread-gone is taken for a refused launch,
/// counted and retried; any other action is left as it is.
pub(crate) fn thread_gone_retried(action: NotifyAction) -> NotifyAction {
    match action {
        NotifyAction::ThreadGone => NotifyAction::LaunchFailed("thread gone".into()),
        other => other,
    }
}

/// [`super::Mutant::BudgetKillsNewerVersion`]: whether the channel reopens for a newer version
/// — `reopens` as the correct code found it, but never after a budget dead letter (`dead`).
pub(crate) fn budget_kills_channel(reopens: bool, dead: Option<DeadLetterReason>) -> bool {
    reopens && dead != Some(DeadLetterReason::Budget)
}

/// [`super::Mutant::BudgetCheckedAfterLaunch`]: the step's `action`, replaced by a budget dead
/// letter when the budget was spent before it (`spent`): the call was made all the same.
pub(crate) fn budget_checked_late(action: NotifyAction, spent: bool) -> NotifyAction {
    if spent {
        NotifyAction::BudgetExhausted
    } else {
        action
    }
}

/// [`super::Mutant::AnsweredSetKeepsLatestOnly`]: the answered request ids cut to the last one.
pub(crate) fn latest_only(answered: Vec<String>) -> Vec<String> {
    answered.last().cloned().into_iter().collect()
}

/// [`super::Mutant::AnswerResentWhenUnconfirmed`]: the answer status a poll claim acts on — an
/// attempt that never wrote its outcome (`sending`) is taken for a pending answer, so the
/// claim marks it as its own attempt and sends it again.
pub(crate) fn sending_resent(status: AnswerStatus) -> AnswerStatus {
    match status {
        AnswerStatus::Sending => AnswerStatus::Pending,
        other => other,
    }
}

/// [`super::Mutant::UnrequestedCancelNotNotified`]: a poll's `event`, dropped when the task
/// was found `cancelled` (`status`) although `row` has no cancel requested.
pub(crate) fn unrequested_cancel_silenced<E>(
    event: Option<E>,
    status: RemoteStatus,
    row: &TaskRow,
) -> Option<E> {
    let unannounced = status == RemoteStatus::Cancelled && row.cancel.requested_at.is_none();
    event.filter(|_| !unannounced)
}

/// [`super::Mutant::NeutraliserSkipsNormalisation`]: the folding of `c` read code point by
/// code point, ASCII case folded only.
pub(crate) fn code_point_only(c: char) -> Vec<char> {
    vec![c.to_ascii_lowercase()]
}

/// [`super::Mutant::RedactionShortestFirst`]: `text` with whole secrets cut one after the
/// other, shortest first, none under [`MIN_REDACTABLE`] bytes (the redaction before issue 11
/// item 7).
pub(crate) fn whole_secrets_shortest_first(text: &str, mut secrets: [&str; 2]) -> String {
    secrets.sort_by_key(|s| s.len());
    let mut out = text.to_owned();
    for secret in secrets.into_iter().filter(|s| s.len() >= MIN_REDACTABLE) {
        out = out.replace(secret, PLACEHOLDER);
    }
    out
}

/// [`super::Mutant::ShortSecretNeedsSpaces`]: whether a short secret stands alone (`alone`,
/// the correct answer) and moreover has only whitespace or the text's ends around it
/// (`before`, `after`).
pub(crate) fn alone_between_spaces(alone: bool, before: Option<char>, after: Option<char>) -> bool {
    let spaced = |c: Option<char>| c.is_none_or(char::is_whitespace);
    alone && spaced(before) && spaced(after)
}

/// [`super::Mutant::LauncherSkipsReconciliation`]: a look's `decision`, replaced — when this
/// launcher made a run (`mine`) — by that run delivering, nothing cancelled.
pub(crate) fn own_run_delivers(
    decision: Option<Decision>,
    mine: Option<&RunId>,
) -> Option<Decision> {
    match mine {
        Some(mine) => Some(Decision {
            deliver: mine.clone(),
            cancel: Vec::new(),
        }),
        None => decision,
    }
}

/// [`super::Mutant::SkewGuardOff`]: a clock check that refused for `skew` taken as within it.
pub(crate) fn skew_ignored(check: ClockCheck) -> ClockCheck {
    match check {
        ClockCheck::Refused(skew) => ClockCheck::Within(skew),
        other => other,
    }
}

/// [`super::Mutant::UnconfirmedInsertCompensated`]: a handle write the store left unknown
/// ("unavailable") taken for a refused one.
pub(crate) fn unknown_as_refused(write: HandleWrite) -> HandleWrite {
    match write {
        HandleWrite::Unknown(e) => HandleWrite::Refused(e),
        other => other,
    }
}

/// [`super::Mutant::OwedHandleGivenUp`]: what a submit still owes after `attempts` tries, with
/// a handle given up once it has been tried [`CANCEL_ATTEMPTS`] times.
pub(crate) fn handle_given_up(owed: Option<Owed>, attempts: u32) -> Option<Owed> {
    let forgotten = matches!(owed, Some(Owed::Handle(_))) && attempts >= CANCEL_ATTEMPTS;
    owed.filter(|_| !forgotten)
}

/// [`super::Mutant::PollClaimSkipsCancelRequested`]: whether polling stands still for `row` —
/// `standing_still` as the correct code found it, or whenever a cancel was ever requested.
pub(crate) fn cancel_ever_requested(standing_still: bool, row: &TaskRow) -> bool {
    standing_still || row.cancel.requested_at.is_some()
}

/// [`super::Mutant::LedgerIgnoresThreadDeletion`]: whether a run may start on `thread` (its
/// owner and deletion flag, if the ledger knows it) for `owner`, deleted or not.
pub(crate) fn deletion_ignored(thread: Option<&(OwnerId, bool)>, owner: &OwnerId) -> bool {
    thread.is_some_and(|(known, _)| known == owner)
}

/// [`super::Mutant::LeaseTokenNotChecked`]: whether `presented` is taken for the `held` lease
/// — the same owner is enough, whatever the token.
pub(crate) fn owner_only(held: &Lease, presented: &Lease) -> bool {
    held.owner == presented.owner
}

/// The cancel work a repeated request leaves: ended work (done or dead-lettered) requested
/// again, due at `now`, where the correct code leaves it as it was.
pub(crate) fn cancel_restarted(
    (status, due_at): (CancelStatus, Option<Timestamp>),
    now: Timestamp,
) -> (CancelStatus, Option<Timestamp>) {
    match status {
        CancelStatus::Done | CancelStatus::DeadLetter => (CancelStatus::Requested, Some(now)),
        CancelStatus::None | CancelStatus::Requested => (status, due_at),
    }
}

/// [`super::Mutant::RepeatCancelPausesPolls`]: after a request that found one recorded already,
/// the next poll is pushed out to `now` plus the sim's poll-backoff cap (40 s).
pub(crate) fn repeat_paused_polls(
    next_poll_at: Option<Timestamp>,
    result: RequestResult,
    now: Timestamp,
) -> Option<Timestamp> {
    let paused = now.plus(std::time::Duration::from_secs(40));
    match result {
        RequestResult::AlreadyRequested => next_poll_at.map(|next| next.max(paused)),
        RequestResult::Requested | RequestResult::AlreadyFinished => next_poll_at,
    }
}

/// [`super::Mutant::MissingRunAwaited`]: a dispatched run the launcher reports missing is taken
/// for one still running (the engine waits on it until `max_run_life`).
pub(crate) fn missing_as_going(status: Result<RunStatus, String>) -> Result<RunStatus, String> {
    match status {
        Ok(RunStatus::Missing) => Ok(RunStatus::Running),
        other => other,
    }
}
