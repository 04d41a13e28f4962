//! Confirming a run in the claim that launched it: a bounded wait for the run's end, so a run
//! that ends quickly costs one outcome write instead of three (`dispatched`, the lookup claim,
//! the outcome).

use super::{Engine, LocalDeadline};
use crate::ids::RunId;
use crate::mutation::{self, Mutant};
use crate::ports::{Clock, Driver, Launcher, RunStatus};
use crate::store::{Claimed, Store};
use crate::transitions::outbox::NotifyAction;
use std::time::Duration;

/// Lookups during the wait, at 1/16, 3/16, 7/16, 15/16 and 16/16 of
/// [`crate::policy::Policy::run_confirm_wait`]: early ones for runs that end at once, then
/// further apart. Bounds the calls one launch adds to [`CONFIRM_LOOKUPS`].
const CONFIRM_LOOKUPS: u32 = 5;

/// The pause before lookup `i` (0-based) of a wait of `wait`: `wait/16 × 2^i`, the last one
/// what is left of `wait`.
fn pause_before(i: u32, wait: Duration) -> Duration {
    let first = wait / 16;
    if i + 1 < CONFIRM_LOOKUPS {
        first * (1 << i)
    } else {
        first
    }
}

impl<S: Store, D: Driver, L: Launcher, C: Clock> Engine<S, D, L, C> {
    /// The outcome of a claim whose launch started `run`: the run's end when it ends within
    /// `run_confirm_wait` — [`NotifyAction::RunSucceeded`] or [`NotifyAction::RunFailed`],
    /// written once in place of `dispatched` — else [`NotifyAction::Launched`], and the run is
    /// looked at by a later claim as before.
    ///
    /// Same guarantees as a lookup claim: each lookup is an external call and starts only while
    /// the lease leaves its margin; the outcome write is fenced by the lease. A crash during the
    /// wait leaves the row `claimed`, and the next claim relaunches under the same idempotency
    /// key, which finds this run. A lookup that fails or finds no run ends the wait without a
    /// verdict (the later lookup claim decides, with its own failure counting).
    pub(super) async fn confirm_run(
        &self,
        c: &Claimed,
        deadline: LocalDeadline,
        run: RunId,
    ) -> NotifyAction {
        let wait = self.policy.run_confirm_wait;
        if wait.is_zero() {
            return NotifyAction::Launched(run);
        }
        let thread = &c.row.identity.thread;
        for i in 0..CONFIRM_LOOKUPS {
            self.clock.sleep(pause_before(i, wait)).await;
            let may_look = self.may_call_out(&c.lease, deadline);
            if !mutation::substitute(Mutant::ConfirmLookupsPastLease, may_look, |_| true) {
                break;
            }
            match self.launcher.run_status(thread, &run).await {
                Ok(RunStatus::Pending | RunStatus::Running) => continue,
                Ok(RunStatus::Success) => return NotifyAction::RunSucceeded,
                Ok(RunStatus::Missing) | Err(_) => break,
                Ok(failed) => {
                    return NotifyAction::RunFailed(format!("run {run} ended: {}", failed.as_str()))
                }
            }
        }
        NotifyAction::Launched(run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pauses_add_up_to_the_wait() {
        let wait = Duration::from_millis(1_600);
        let pauses: Vec<u64> = (0..CONFIRM_LOOKUPS)
            .map(|i| pause_before(i, wait).as_millis() as u64)
            .collect();
        assert_eq!(pauses, [100, 200, 400, 800, 100]);
        assert_eq!(pauses.iter().sum::<u64>(), 1_600);
    }
}
