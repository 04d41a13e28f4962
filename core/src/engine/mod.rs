//! The engine: three lease loops (cancel, poll, notify) over any [`Store`], [`Driver`] and
//! [`Launcher`], plus submit and the user-facing calls.
//!
//! One skeleton for every loop: claim a batch (skip locked, fresh leases) → act on each row
//! concurrently → write the outcomes in one batch, each guarded by its lease. The one sleep
//! inside is the bounded wait for a run launched in the same claim (`run_confirm_wait`); the
//! caller decides the cadence by calling [`Engine::run_once`]. A crash anywhere just lets
//! leases expire; the only in-memory state is advisory (which servers looked down, see
//! `recovery`), and losing it only delays a recovery to the tasks' own backoff.
//!
//! Errors are isolated per task: a row whose outcome cannot be written is retried alone and,
//! if it still fails, released with a counted error while the rest of the batch proceeds.

mod answer_step;
mod api;
mod batch;
mod cancel_loop;
mod clock_check;
mod intent;
mod last_attempt;
mod local_deadline;
mod notify_loop;
mod owed;
mod poll_loop;
mod recovery;
mod run_confirm;
mod submit;

pub use api::ApiError;
pub use clock_check::{measure, skew_ms, ClockCheck};
pub use owed::{SubmitsSettled, CANCEL_ATTEMPTS};
pub use recovery::{OutageMemory, RECOVERY_SPACING};
pub use submit::{SubmitCommand, SubmitError, WRITE_ATTEMPTS};
// For the planted bugs' pure deviations (crate::mutation::planted).
pub(crate) use owed::Owed;
pub(crate) use submit::HandleWrite;

use crate::ids::WorkerId;
use crate::lease::LeaseKind;
use crate::policy::Policy;
use crate::ports::{Clock, Driver, Launcher};
use crate::store::{ClaimRequest, Claimed, Store};
use local_deadline::LocalDeadline;
use owed::PendingSubmit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use tracing::Instrument;

/// What one loop pass did.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct LoopReport {
    /// Rows claimed.
    pub claimed: usize,
    /// Writes the store accepted.
    pub applied: usize,
    /// Writes the store refused (lost lease, moved version, cancel requested, terminal).
    pub refused: usize,
    /// Leases given back without a result.
    pub released: usize,
    /// Store calls that failed (the store was unreachable or rejected the batch).
    pub store_errors: usize,
    /// How long the pass took by the engine's clock, claim to last write.
    pub elapsed: Duration,
}

/// What [`Engine::run_once`] did, per loop.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct PassReport {
    /// The cancel loop.
    pub cancel: LoopReport,
    /// The poll loop.
    pub poll: LoopReport,
    /// The notification loop.
    pub notify: LoopReport,
    /// What the submits this engine ran still owed, settled before the loops (DOMAIN §7).
    pub submits: SubmitsSettled,
    /// The clock check before the loops: when it refused, no loop claimed (their reports are
    /// empty) and an unreadable store clock counts as a store error.
    pub clock: ClockCheck,
}

/// What a loop's own clock check said before its claim.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum ClockVerdict {
    /// The clocks agree: the claim was made.
    Allowed,
    /// The skew is too large (or the store's clock unreadable): nothing was claimed, and no
    /// lease of this loop may be acted on in this pass.
    Refused,
}

/// The engine of one worker (or one lane of a worker).
pub struct Engine<S, D, L, C> {
    store: S,
    driver: D,
    launcher: L,
    clock: C,
    worker: WorkerId,
    policy: Policy,
    shutting_down: AtomicBool,
    owed: Mutex<Vec<PendingSubmit>>,
    servers: recovery::OutageMemory,
}

impl<S: Store, D: Driver, L: Launcher, C: Clock> Engine<S, D, L, C> {
    /// An engine whose leases carry `worker` as owner.
    pub fn new(
        store: S,
        driver: D,
        launcher: L,
        clock: C,
        worker: WorkerId,
        policy: Policy,
    ) -> Self {
        Engine {
            store,
            driver,
            launcher,
            clock,
            worker,
            policy,
            shutting_down: AtomicBool::new(false),
            owed: Mutex::new(Vec::new()),
            servers: recovery::OutageMemory::default(),
        }
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The timings in use.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// One pass of every loop: what submits owe, the clock check, then cancel, poll and notify.
    /// What submits owe holds no lease and is settled whatever the clocks say; the loops claim
    /// only when the clock check allows it ([`ClockCheck`]), and otherwise the pass ends there.
    pub async fn run_once(&self) -> PassReport {
        // Instrumented, not entered: a span entered across an await leaks into whatever else
        // runs on the thread meanwhile.
        let span = tracing::debug_span!("pass", worker = %self.worker);
        async {
            let submits = self.settle_submits().await;
            let clock = self.check_clock().await;
            if !clock.allows_claims() {
                return PassReport {
                    submits,
                    clock,
                    ..PassReport::default()
                };
            }
            let cancel = self.timed(self.cancel_pass()).await;
            let mut handed_off = Vec::new();
            let poll = self.timed(self.poll_pass(&mut handed_off)).await;
            let notify = self.timed(self.notify_pass(handed_off)).await;
            PassReport {
                submits,
                clock,
                cancel,
                poll,
                notify,
            }
        }
        .instrument(span)
        .await
    }

    /// Runs one loop's pass and records how long it took.
    async fn timed(&self, pass: impl std::future::Future<Output = LoopReport>) -> LoopReport {
        let started = self.clock.now();
        let mut report = pass.await;
        report.elapsed = self.clock.now().since(started);
        report
    }

    /// Asks the engine to stop: rows claimed from now on, and rows not yet acted on, are
    /// released at once without counting a failure (the worker's own shutdown is not the
    /// task's fault). A pass already past its external call still writes its result.
    pub fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
    }

    fn shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::SeqCst)
    }

    /// Claims a batch for `kind`. The clock is checked against the store's again first, with
    /// no await between that check and the claim's `now`: a clock that jumped during the pass
    /// (after the pass's own check) claims nothing either. Returns the claims with the batch's
    /// [`LocalDeadline`], measured from before the claim was sent.
    async fn claim(
        &self,
        kind: LeaseKind,
        lease_for: Duration,
        report: &mut LoopReport,
    ) -> (Vec<Claimed>, LocalDeadline, ClockVerdict) {
        let deadline = LocalDeadline::after(&self.clock, lease_for);
        if !self.check_clock().await.allows_claims() {
            return (Vec::new(), deadline, ClockVerdict::Refused);
        }
        let req = ClaimRequest {
            worker: self.worker.clone(),
            now: self.clock.now(),
            lease_for,
            limit: self.policy.batch_size,
        };
        match self.store.claim(kind, req).await {
            Ok(claimed) => {
                report.claimed = claimed.len();
                (claimed, deadline, ClockVerdict::Allowed)
            }
            Err(e) => {
                tracing::debug!(loop_kind = kind.as_str(), error = %e, "claim failed");
                report.store_errors += 1;
                (Vec::new(), deadline, ClockVerdict::Allowed)
            }
        }
    }
}
