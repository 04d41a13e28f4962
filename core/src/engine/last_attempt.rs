//! One last attempt before a budget dead letter (DOMAIN §3): a notification whose failure
//! budget its runs spent is launched once more, instead of being dead-lettered, when the
//! launcher has proved healthy since — a run seen by this worker succeeded after the failure
//! that spent the budget. That failure's time is read from the row: its write made the row due
//! `retry_delay(failures)` later, and nothing but a release (of a claim whose write the store
//! refused, rare for a spent budget) moves a waiting row's due time. Runs that failed because the Agent Server (or what it calls)
//! was sick then get one try on a server that works again; a notification whose own runs keep
//! failing while others succeed is dead-lettered after that one try.
//!
//! Exactly one: the attempt is made only while the counted failures equal the budget, and its
//! own failure (a run that fails, a launch refused) takes them past it. A launch the thread
//! refuses as busy (409), or an unanswered launcher, counts nothing, so the attempt is simply
//! made again later. What the worker remembers is advisory ([`super::recovery`]'s memory): a
//! worker that restarted, or that never saw a run succeed, dead-letters as before.

use super::Engine;
use crate::mutation::{self, Mutant};
use crate::policy::FAILURE_BUDGET;
use crate::ports::{Clock, Driver, Launcher};
use crate::store::Store;
use crate::task::Outbox;

impl<S: Store, D: Driver, L: Launcher, C: Clock> Engine<S, D, L, C> {
    /// Records that a notification run was seen succeeding now.
    pub(super) fn saw_run_success(&self) {
        self.servers.note_run_success(self.clock.now());
    }

    /// Whether the notification `o`, whose failure budget is spent, gets its last attempt
    /// instead of a dead letter (see the module's contract).
    pub(super) fn last_attempt_due(&self, o: &Outbox) -> bool {
        let failed_at = o.due_at.minus(self.policy.retry_delay(o.failures));
        let healthy_since = self
            .servers
            .run_succeeded_at()
            .is_some_and(|succeeded| succeeded > failed_at);
        let due = o.failures == FAILURE_BUDGET && healthy_since;
        mutation::substitute(Mutant::LastAttemptSkipped, due, |_| false)
    }
}
