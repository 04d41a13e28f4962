//! The engine: three lease loops (cancel, poll, notify) over any [`Store`], [`Driver`] and
//! [`Launcher`], plus submit and the user-facing calls.
//!
//! One skeleton for every loop: claim a batch (skip locked, fresh leases) → act on each row
//! concurrently → write the outcomes in one batch, each guarded by its lease. The one sleep
//! inside is the bounded wait for a run launched in the same claim (`run_confirm_wait`); the
//! caller decides the cadence by calling [`Engine::run_once`]. A crash anywhere just lets
//! leases expire; there is no in-memory state to recover.
//!
//! Errors are isolated per task: a row whose outcome cannot be written is retried alone and,
//! if it still fails, released with a counted error while the rest of the batch proceeds.

mod answer_step;
mod api;
mod batch;
mod cancel_loop;
mod clock_check;
mod local_deadline;
mod notify_loop;
mod poll_loop;
mod run_confirm;
mod submit;

pub use api::ApiError;
pub use clock_check::{measure, skew_ms, ClockCheck};
pub use submit::{SubmitCommand, SubmitError};

use crate::ids::{ServerId, TaskId, WorkerId};
use crate::lease::LeaseKind;
use crate::policy::Policy;
use crate::ports::{Clock, Driver, Launcher};
use crate::secret::RemoteHandle;
use crate::store::{ClaimRequest, Claimed, Store};
use crate::task::TaskRow;
use local_deadline::LocalDeadline;
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
    /// Remote tasks cancelled as compensation for submits that did not persist.
    pub compensated: usize,
    /// The clock check before the loops: when it refused, no loop claimed (their reports are
    /// empty) and an unreadable store clock counts as a store error.
    pub clock: ClockCheck,
}

/// A submit that is not settled, with the attempts made so far: its row, while the insert's
/// outcome is unknown (to be inserted again), or only its remote task, once the store refused
/// the row (to be cancelled).
struct PendingCompensation {
    task: TaskId,
    server: ServerId,
    handle: RemoteHandle,
    row: Option<TaskRow>,
    attempts: u32,
}

/// Unsettled submits are tried this many times, then given up (best effort, DOMAIN §7).
const COMPENSATION_ATTEMPTS: u32 = 3;

/// The engine of one worker (or one lane of a worker).
pub struct Engine<S, D, L, C> {
    store: S,
    driver: D,
    launcher: L,
    clock: C,
    worker: WorkerId,
    policy: Policy,
    shutting_down: AtomicBool,
    compensations: Mutex<Vec<PendingCompensation>>,
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
            compensations: Mutex::new(Vec::new()),
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

    /// One pass of every loop: compensations, the clock check, then cancel, poll and notify.
    /// Compensations hold no lease and run whatever the clocks say; the loops claim only when
    /// the clock check allows it ([`ClockCheck`]), and otherwise the pass ends there.
    pub async fn run_once(&self) -> PassReport {
        // Instrumented, not entered: a span entered across an await leaks into whatever else
        // runs on the thread meanwhile.
        let span = tracing::debug_span!("pass", worker = %self.worker);
        async {
            let compensated = self.compensate_pending().await;
            let clock = self.check_clock().await;
            if !clock.allows_claims() {
                return PassReport {
                    compensated,
                    clock,
                    ..PassReport::default()
                };
            }
            let cancel = self.timed(self.cancel_pass()).await;
            let mut handed_off = Vec::new();
            let poll = self.timed(self.poll_pass(&mut handed_off)).await;
            let notify = self.timed(self.notify_pass(handed_off)).await;
            PassReport {
                compensated,
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
    ) -> (Vec<Claimed>, LocalDeadline) {
        let deadline = LocalDeadline::after(&self.clock, lease_for);
        if !self.check_clock().await.allows_claims() {
            return (Vec::new(), deadline);
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
                (claimed, deadline)
            }
            Err(e) => {
                tracing::debug!(loop_kind = kind.as_str(), error = %e, "claim failed");
                report.store_errors += 1;
                (Vec::new(), deadline)
            }
        }
    }
}
