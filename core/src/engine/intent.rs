//! A claimed row that is a submit's intent still waiting for its handle (DOMAIN §7): there is
//! no remote task to call. Once its grace is over the submit that stored it is taken for dead
//! and the task ends as untracked, telling the thread; before that, the claim is given back,
//! uncounted, until the grace ends.

use super::Engine;
use crate::ports::{Clock, Driver, Launcher};
use crate::store::{Claimed, Release, Store};
use crate::time::Timestamp;
use crate::transitions::poll::PollUpdate;
use crate::transitions::submit::{grace_end, untracked};

/// What a loop does with a claimed intent.
pub(super) enum IntentStep {
    /// The grace is not over: give the claim back until then, counting nothing.
    Wait(Release),
    /// The grace is over: end the task as untracked with this update, completed at this time.
    Untracked(Box<PollUpdate>, Timestamp),
}

impl<S: Store, D: Driver, L: Launcher, C: Clock> Engine<S, D, L, C> {
    /// The step for claim `c` of an intent row ([`crate::transitions::submit::awaits_handle`]).
    pub(super) fn intent_step(&self, c: &Claimed) -> IntentStep {
        let at = self.clock.now();
        let end = grace_end(&c.row, &self.policy);
        if at < end {
            return IntentStep::Wait(Release {
                task_id: c.row.id().clone(),
                lease: c.lease.clone(),
                retry_at: end,
                error: None,
            });
        }
        tracing::warn!(task = %c.row.id(), "the submit never saved its remote task's id: the task ends as not tracked and its thread is told");
        IntentStep::Untracked(Box::new(untracked(&c.row, at, &self.policy)), at)
    }
}
