//! Limits and timings. Every loop, string and retry has an explicit bound, and they all live here.

use crate::time::Timestamp;
use std::time::Duration;

/// Failed deliveries of one snapshot before it is dead-lettered (DOMAIN §3).
pub const FAILURE_BUDGET: u32 = 5;
/// Failed remote cancels of one task before the cancel is dead-lettered (DOMAIN §6).
pub const CANCEL_BUDGET: u32 = 5;
/// Consecutive poll errors from which tracking is degraded (DOMAIN §4).
pub const DEGRADED_AFTER: u32 = 3;

/// Polls in a row whose answers could not be decoded before the task is ended `failed` with a
/// protocol error (DOMAIN §3): a proxy's error page or a stream cut during a deploy passes, a
/// server that keeps answering nonsense does not.
pub const MALFORMED_STRIKES: u32 = 5;
/// The exponent of the poll backoff stops growing here (DOMAIN §4).
pub const BACKOFF_EXPONENT_CAP: u32 = 16;
/// The earliest next poll of an `input_required` task (DOMAIN §4).
pub const INPUT_REQUIRED_FLOOR: Duration = Duration::from_secs(60);
/// The latest next poll of any task (DOMAIN §4).
pub const MAX_POLL_DELAY: Duration = Duration::from_secs(24 * 60 * 60);
/// Characters of an error kept in storage (DOMAIN §4).
pub const MAX_STORED_ERROR: usize = 4_000;
/// Characters of an error shown to users or models (DOMAIN §4).
pub const MAX_SHOWN_ERROR: usize = 500;
/// Characters of a result kept as a preview; longer results are truncated and flagged.
pub const MAX_RESULT_PREVIEW: usize = 8_000;
/// Characters of an input request; a longer one is a protocol error.
pub const MAX_INPUT_REQUEST: usize = 4_000;
/// Characters of an artifact reference; a longer one is a protocol error.
pub const MAX_ARTIFACT: usize = 4_000;
/// Characters of a task name.
pub const MAX_NAME: usize = 200;
/// Characters of an id given by a caller (owner, thread, server, remote handle parts).
pub const MAX_ID: usize = 200;
/// Characters of driver data.
pub const MAX_DRIVER_DATA: usize = 4_000;
/// Tasks in the per-run context projection (DOMAIN §8).
pub const MAX_CONTEXT_TASKS: usize = 20;
/// Bytes of a user's answer to an input request; a longer one is refused as invalid.
pub const MAX_ANSWER_BYTES: usize = 16 << 10;
/// Characters of an input request id (`[A-Za-z0-9_-]`, as written in the input request).
pub const MAX_REQUEST_ID: usize = 64;
/// Answered request ids a task remembers for its current input request
/// ([`crate::task::AnswerState::answered`]). At the limit every further answer is refused as
/// already answered: an answer is never sent twice, and the remaining questions can only be
/// cancelled.
pub const MAX_ANSWERED_REQUESTS: usize = 32;
/// Rows in one claim batch: a larger claim limit is refused as invalid by every store.
pub const MAX_BATCH: usize = 1_000;
/// Tasks in one listing when the caller names no limit.
pub const DEFAULT_LIST: usize = 20;
/// Tasks in one listing, at most: a larger limit is refused as invalid by every store.
pub const MAX_LIST: usize = 100;
/// Submits one engine keeps owing the store (a handle to record, an intent to withdraw, a
/// compensating cancel) while the store does not answer; a submit beyond it is refused before
/// anything is started (DOMAIN §7).
pub const MAX_PENDING_SUBMITS: usize = 10_000;
/// The first retry of a store write a submit owes comes this long after the failed one; each
/// later retry waits twice as long, up to [`SUBMIT_RETRY_CAP`].
pub const SUBMIT_RETRY_BASE: Duration = Duration::from_secs(1);
/// The longest wait between two retries of a store write a submit owes.
pub const SUBMIT_RETRY_CAP: Duration = Duration::from_secs(30);

/// The timings of the three loops. Every transition that schedules something reads them here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Poll interval when the server gives no hint; also the base of the poll backoff.
    pub poll_interval: Duration,
    /// Upper bound of the poll backoff.
    pub max_poll_backoff: Duration,
    /// How long a poll claim holds its lease.
    pub poll_lease: Duration,
    /// How long a notification claim holds its lease.
    pub notify_lease: Duration,
    /// How long a cancel claim holds its lease.
    pub cancel_lease: Duration,
    /// How long to wait before looking at a dispatched run again, and after a busy thread (409).
    pub run_check_interval: Duration,
    /// How long the claim that launched a run waits for the run to end (a few lookups, spread
    /// over the wait) before writing it `dispatched`: a run that ends within it has its outcome
    /// written once, with no `dispatched` write and no later lookup claim. Zero: never wait.
    /// The whole notification pass waits with its slowest row, so keep it short.
    pub run_confirm_wait: Duration,
    /// Base of the delivery and cancel backoff (`base × 2^failures`, capped).
    pub retry_base: Duration,
    /// Upper bound of the delivery and cancel backoff.
    pub max_retry_backoff: Duration,
    /// Delay before retrying a row after an unexpected error or an unreachable store.
    pub release_backoff: Duration,
    /// An external call (remote poll or cancel, launch, run lookup) starts only while at least
    /// this much of the claim's lease is left; it must exceed the ports' call timeouts plus the
    /// clock skew between workers, so a call never outlives its lease.
    pub min_lease_left: Duration,
    /// Rows claimed per loop pass.
    pub batch_size: usize,
    /// The longest a dispatched run may stay pending or running: a run found still going after
    /// this long since its launch is interrupted through the launcher and counted as a failed
    /// attempt, so a run that never ends cannot hold its task's notifications (and its thread)
    /// forever. Must exceed the longest run a notification legitimately takes.
    pub max_run_life: Duration,
    /// The largest difference between the engine's clock and the store's it claims under: a
    /// pass that measures more claims nothing ([`crate::store::Store::store_time`]). Two
    /// workers each within it may differ by twice as much, so it must stay below half of
    /// `min_lease_left` minus the longest external call timeout; then a worker whose clock
    /// runs ahead never sees a lease as expired while its holder's call is still running.
    pub max_clock_skew: Duration,
    /// How long a submit's intent row waits for the remote task's handle (DOMAIN §7): the row
    /// is stored before the remote call, and the handle after it. One still without its handle
    /// this long after it was stored belongs to a submit that died between the two (the worker
    /// crashed or stopped with the handle unsaved): the poll or cancel loop then ends it
    /// `failed`, telling the thread the task may have started but could not be tracked. The
    /// submitting worker retries its handle write until the store answers, so this must
    /// comfortably exceed a store outage the worker is expected to ride out.
    pub submit_grace: Duration,
    /// The longest a notification or a cancel waits out a peer that cannot be reached, times
    /// out or answers 5xx (DOMAIN §3, §6): unavailability never spends a failure budget, and
    /// only this time limit, counted from the first unanswered call of the episode, ends it as
    /// a dead letter of its own reason.
    pub max_unavailable: Duration,
    /// Upper bound of the backoff while a peer is unavailable (`retry_base × 2^n`, capped):
    /// short, so delivery resumes soon after the peer is back.
    pub max_unavailable_backoff: Duration,
    /// While an MCP server's polls find it unavailable, one of its backed-off tasks is polled
    /// at least this often (the probe, `engine::recovery`), so that its return is seen soon
    /// whatever the backoff of the rest (up to `max_poll_backoff`).
    pub outage_probe_interval: Duration,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            poll_interval: Duration::from_secs(30),
            max_poll_backoff: Duration::from_secs(60 * 60),
            poll_lease: Duration::from_secs(60),
            notify_lease: Duration::from_secs(60),
            cancel_lease: Duration::from_secs(60),
            run_check_interval: Duration::from_secs(10),
            run_confirm_wait: Duration::from_secs(1),
            retry_base: Duration::from_secs(5),
            max_retry_backoff: Duration::from_secs(15 * 60),
            release_backoff: Duration::from_secs(5),
            min_lease_left: Duration::from_secs(30),
            batch_size: 64,
            max_run_life: Duration::from_secs(30 * 60),
            max_clock_skew: Duration::from_secs(2),
            submit_grace: Duration::from_secs(10 * 60),
            max_unavailable: Duration::from_secs(24 * 60 * 60),
            max_unavailable_backoff: Duration::from_secs(60),
            outage_probe_interval: Duration::from_secs(30),
        }
    }
}

impl Policy {
    /// `base × 2^min(n, cap)`, at most `max`.
    pub fn backoff(base: Duration, n: u32, max: Duration) -> Duration {
        let factor = 1u32 << n.min(BACKOFF_EXPONENT_CAP);
        base.checked_mul(factor).unwrap_or(max).min(max)
    }

    /// The delay before the next delivery or cancel attempt after `failures` counted failures.
    pub fn retry_delay(&self, failures: u32) -> Duration {
        Self::backoff(
            self.retry_base,
            failures.saturating_sub(1),
            self.max_retry_backoff,
        )
    }
}

impl Policy {
    /// The delay before the next call after `outages` unanswered calls in a row (the first
    /// waits `retry_base`), at most `max_unavailable_backoff`.
    pub fn unavailable_delay(&self, outages: u32) -> Duration {
        Self::backoff(
            self.retry_base,
            outages.saturating_sub(1),
            self.max_unavailable_backoff,
        )
    }

    /// Whether an outage that began at `since` has lasted `max_unavailable` by `now`.
    pub fn outage_too_long(&self, since: Option<Timestamp>, now: Timestamp) -> bool {
        since.is_some_and(|s| now.since(s) >= self.max_unavailable)
    }
}

/// An error text as stored: NUL (which Postgres text rejects) replaced by U+FFFD, bounded to
/// [`MAX_STORED_ERROR`] characters. Both stores then hold the same text.
pub fn stored_error(text: &str) -> String {
    bounded(&text.replace('\0', "\u{FFFD}"), MAX_STORED_ERROR)
}

/// The first `max` characters of `text` (never splits a character).
pub fn bounded(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => text[..cut].to_owned(),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_then_caps() {
        let b = Duration::from_secs(1);
        let max = Duration::from_secs(100);
        assert_eq!(Policy::backoff(b, 0, max), Duration::from_secs(1));
        assert_eq!(Policy::backoff(b, 3, max), Duration::from_secs(8));
        assert_eq!(Policy::backoff(b, 7, max), max);
        assert_eq!(
            Policy::backoff(b, 40, Duration::from_secs(1 << 20)),
            Duration::from_secs(1 << 16)
        );
    }

    #[test]
    fn bounded_counts_characters_not_bytes() {
        assert_eq!(bounded("héllo", 2), "hé");
        assert_eq!(bounded("ab", 5), "ab");
    }
}
