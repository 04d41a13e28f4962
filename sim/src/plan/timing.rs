//! The timings of the simulated engines and clients: leases, cadences and call deadlines,
//! short so a few minutes of simulated time see many leases expire.

use std::time::Duration;
use tasklatch_core::policy::Policy;

/// The simulated engines' `max_clock_skew`: two workers within it differ by at most twice as
/// much, and that plus the longest call deadline stays below `min_lease_left`. Plans hold skews
/// below it (which the guard lets through), between it and 3 s, and far beyond it (8–30 s).
pub const MAX_SKEW_MS: u64 = 1_500;

/// The largest clock skew a plan draws for a worker (the far-beyond-the-guard kind).
pub const MAX_BIG_SKEW: Duration = Duration::from_secs(30);

/// Call deadlines of the simulated clients.
#[derive(Clone, Debug)]
pub struct Timeouts {
    /// Store calls.
    pub store: Duration,
    /// Remote server calls.
    pub remote: Duration,
    /// Launcher calls.
    pub launcher: Duration,
}

/// How long a lease of the simulated engines lasts (poll, notify and cancel alike).
pub const LEASE_MS: u64 = 15_000;

/// How long a simulated notification run may go on before the engine interrupts it: above the
/// slowest run a slow-runs fault makes (25 s) plus the largest clock skew, so only stuck runs
/// are interrupted.
pub const MAX_RUN_LIFE_SECS: u64 = 30;

/// How often a worker lane runs a pass of its loops.
pub const PASS_INTERVAL: Duration = Duration::from_secs(1);

/// How long after it finished and settled a row is deleted by retention (the worker's
/// `[retention] after_hours`, scaled down so that a run sees rows go).
pub const RETENTION_AFTER: Duration = Duration::from_secs(20);

/// How long a dead letter is kept unless an operator requeues it first (`[retention]
/// dead_letter_after_hours`): longer than the operators' requeues of a plan come after the
/// dead-lettering plus the largest clock skew, so every such requeue finds its dead letter.
pub const DEAD_LETTERS_AFTER: Duration = Duration::from_secs(150);

/// How often worker 0 runs a retention pass.
pub const RETENTION_EVERY: Duration = Duration::from_secs(5);

/// How long a simulated submit's intent waits for its handle: longer than any store outage a
/// plan draws (so an acknowledged submit is always tracked), short enough that a submitter
/// crash's untracked ending is seen within a run.
pub const SUBMIT_GRACE_SECS: u64 = 90;

/// How long a simulated notification or cancel waits out an unavailable peer: far beyond any
/// outage a plan draws, so every dead letter of reason `unavailable` is a bug.
pub const MAX_UNAVAILABLE_SECS: u64 = 3_600;

/// The timings the simulated engines run with: short, so a few minutes of simulated time see
/// many leases expire. `min_lease_left` exceeds the longest call deadline plus the largest
/// clock skew a plan may hold, so no external call outlives its lease.
pub fn sim_policy() -> Policy {
    Policy {
        poll_interval: Duration::from_secs(5),
        max_poll_backoff: Duration::from_secs(40),
        // Beyond the checker's longest poll gap: the probe must not hide an uncapped backoff
        // (the planted poll-backoff-uncapped) behind polls of its own.
        outage_probe_interval: Duration::from_secs(180),
        poll_lease: Duration::from_millis(LEASE_MS),
        notify_lease: Duration::from_millis(LEASE_MS),
        cancel_lease: Duration::from_millis(LEASE_MS),
        run_check_interval: Duration::from_secs(2),
        run_confirm_wait: Duration::from_millis(1_600),
        retry_base: Duration::from_secs(2),
        max_retry_backoff: Duration::from_secs(20),
        release_backoff: Duration::from_secs(2),
        min_lease_left: Duration::from_secs(9),
        batch_size: 16,
        max_run_life: Duration::from_secs(MAX_RUN_LIFE_SECS),
        max_clock_skew: Duration::from_millis(MAX_SKEW_MS),
        submit_grace: Duration::from_secs(SUBMIT_GRACE_SECS),
        max_unavailable: Duration::from_secs(MAX_UNAVAILABLE_SECS),
        max_unavailable_backoff: Duration::from_secs(10),
    }
}

/// The call deadlines matching [`sim_policy`].
pub fn sim_timeouts() -> Timeouts {
    Timeouts {
        store: Duration::from_secs(3),
        remote: Duration::from_secs(5),
        launcher: Duration::from_secs(3),
    }
}

/// Time a delivery may still need once the faults stop, over and above the chains
/// [`settle_bound`] counts: tasks of one thread deliver one run at a time (a launch meets 409
/// while the thread's run goes on), and a plan has at most 14 tasks.
const SERIALISED_RUNS_SLACK: Duration = Duration::from_secs(60);

/// How long after the faults stop the world must have settled, derived from `policy`: a lease
/// abandoned at the heal expires and its row waits out the release backoff; the next poll is at
/// most the longest scheduled delay away (the backoff cap or the `input_required` floor); every
/// notification attempt of the failure budget, and the one last attempt after it, may meet a
/// run left stuck (found after `max_run_life` plus a run check) and wait out the longest retry
/// backoff; every cancel
/// attempt of its budget may wait the longest retry backoff too; and runs on one thread queue.
/// Well under the fixed 600 s it replaces, and it grows with any policy term that is raised.
pub fn settle_bound(policy: &Policy) -> Duration {
    use tasklatch_core::policy::{CANCEL_BUDGET, FAILURE_BUDGET, INPUT_REQUIRED_FLOOR};
    let poll_wait = policy.max_poll_backoff.max(INPUT_REQUIRED_FLOOR);
    let notify_attempt = policy.max_run_life + policy.run_check_interval + policy.max_retry_backoff;
    policy.poll_lease
        + policy.release_backoff
        + poll_wait
        + notify_attempt * (FAILURE_BUDGET + 1)
        + policy.max_retry_backoff * CANCEL_BUDGET
        + SERIALISED_RUNS_SLACK
}

/// The fixed instant simulated time starts at: 2026-01-01T00:00:00Z.
pub const EPOCH_SECS: u64 = 1_767_225_600;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launch_with_two_looks_fits_the_lease_margin() {
        let (p, t) = (sim_policy(), sim_timeouts());
        assert!(
            2 * t.launcher < p.min_lease_left,
            "a langgraph-mode launch takes up to two launcher deadlines"
        );
    }

    #[test]
    fn two_workers_within_the_skew_limit_never_see_a_running_call_s_lease_as_expired() {
        let (p, t) = (sim_policy(), sim_timeouts());
        let longest = t.remote.max(t.launcher).max(t.store);
        assert!(longest + 2 * p.max_clock_skew < p.min_lease_left);
    }

    #[test]
    fn the_settle_bound_follows_the_policy() {
        let p = sim_policy();
        assert_eq!(settle_bound(&p), Duration::from_secs(549));
        let slower = Policy {
            max_poll_backoff: Duration::from_secs(100),
            ..p.clone()
        };
        assert_eq!(settle_bound(&slower), Duration::from_secs(589));
    }
}
