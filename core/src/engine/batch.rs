//! Writing a loop's outcomes: one batch, with per-row isolation when the batch itself fails.

use super::{Engine, LocalDeadline, LoopReport};
use crate::ids::TaskId;
use crate::lease::{Lease, LeaseKind};
use crate::mutation::{self, Mutant};
use crate::ports::{Clock, Driver, Launcher};
use crate::store::{Release, Store, StoreError, WriteOutcome};
use std::future::Future;

/// A write about one claimed row.
pub(super) trait RowWrite: Clone {
    fn task_id(&self) -> &TaskId;
    fn lease(&self) -> &Lease;
}

impl<S: Store, D: Driver, L: Launcher, C: Clock> Engine<S, D, L, C> {
    /// Writes `batch` with `write`. If the store rejects the batch as a whole (not merely
    /// unreachable), each row is retried alone so one poisoned row cannot hold back the others.
    /// Returns the rows the store still rejects alone, with its answer: the caller degrades or
    /// releases them ([`Engine::release_rejected`]), so none keeps its lease until expiry.
    pub(super) async fn write_batch<W, F, Fut>(
        &self,
        kind: LeaseKind,
        batch: Vec<W>,
        write: F,
        report: &mut LoopReport,
    ) -> Vec<(W, StoreError)>
    where
        W: RowWrite,
        F: Fn(Vec<W>) -> Fut,
        Fut: Future<Output = Result<Vec<WriteOutcome>, StoreError>>,
    {
        let mut rejected = Vec::new();
        if batch.is_empty() {
            return rejected;
        }
        match write(batch.clone()).await {
            Ok(outcomes) => tally(&batch, &outcomes, report),
            Err(StoreError::Unavailable(e)) => {
                tracing::debug!(loop_kind = kind.as_str(), error = %e, "batch write failed; leases will expire");
                report.store_errors += 1;
            }
            Err(batch_error) => {
                tracing::warn!(loop_kind = kind.as_str(), error = %batch_error, "batch rejected; writing rows one by one");
                report.store_errors += 1;
                for w in batch {
                    match write(vec![w.clone()]).await {
                        Ok(outcomes) => tally(std::slice::from_ref(&w), &outcomes, report),
                        Err(StoreError::Unavailable(_)) => report.store_errors += 1,
                        Err(e) => {
                            tracing::warn!(loop_kind = kind.as_str(), task = %w.task_id(), error = %e, "row write rejected");
                            rejected.push((w, e));
                        }
                    }
                }
            }
        }
        rejected
    }

    /// Releases rows whose write the store rejected, each with a counted error for loop
    /// `kind` (the notify and cancel budgets bound how often that repeats).
    pub(super) async fn release_rejected<W: RowWrite>(
        &self,
        kind: LeaseKind,
        rejected: Vec<(W, StoreError)>,
        report: &mut LoopReport,
    ) {
        let releases = rejected
            .into_iter()
            .map(|(w, e)| Release {
                task_id: w.task_id().clone(),
                lease: w.lease().clone(),
                retry_at: self.clock.now().plus(self.policy.release_backoff),
                error: Some(format!("unexpected store error: {e}")),
            })
            .collect();
        self.release_batch(kind, releases, report).await;
    }

    /// Gives leases back without a result.
    pub(super) async fn release_batch(
        &self,
        kind: LeaseKind,
        releases: Vec<Release>,
        report: &mut LoopReport,
    ) {
        if releases.is_empty() {
            return;
        }
        let count = releases.len();
        match self.store.release(kind, releases, self.clock.now()).await {
            Ok(outcomes) => report.released += outcomes.iter().filter(|o| o.is_ok()).count(),
            Err(e) => {
                tracing::debug!(loop_kind = kind.as_str(), error = %e, count, "release failed; leases will expire");
                report.store_errors += 1;
            }
        }
    }

    /// Whether an external call may start under `lease`: enough of it is left (see
    /// [`crate::policy::Policy::min_lease_left`]) by the wall clock and by the claimer's
    /// monotonic `deadline`, and the engine is not shutting down.
    pub(super) fn may_call_out(&self, lease: &Lease, deadline: LocalDeadline) -> bool {
        let margin = self.policy.min_lease_left;
        !self.shutting_down()
            && self.clock.now().plus(margin) < lease.expires_at
            && mutation::substitute(
                Mutant::LeaseCheckWallClockOnly,
                deadline.leaves(&self.clock, margin),
                |_| true,
            )
    }

    /// A release of `lease` due after the release backoff, or at once when shutting down.
    pub(super) fn release_of(
        &self,
        task_id: &TaskId,
        lease: &Lease,
        error: Option<String>,
    ) -> Release {
        let now = self.clock.now();
        let retry_at = if error.is_none() && self.shutting_down() {
            now
        } else {
            now.plus(self.policy.release_backoff)
        };
        Release {
            task_id: task_id.clone(),
            lease: lease.clone(),
            retry_at,
            error,
        }
    }
}

fn tally<W: RowWrite>(batch: &[W], outcomes: &[WriteOutcome], report: &mut LoopReport) {
    for (w, outcome) in batch.iter().zip(outcomes) {
        match outcome {
            Ok(_) => report.applied += 1,
            Err(refusal) => {
                tracing::debug!(task = %w.task_id(), token = ?w.lease().token, ?refusal, "write refused");
                report.refused += 1;
            }
        }
    }
}

impl RowWrite for crate::store::PollWrite {
    fn task_id(&self) -> &TaskId {
        &self.task_id
    }
    fn lease(&self) -> &Lease {
        &self.lease
    }
}

impl RowWrite for crate::store::NotifyWrite {
    fn task_id(&self) -> &TaskId {
        &self.task_id
    }
    fn lease(&self) -> &Lease {
        &self.lease
    }
}

impl RowWrite for crate::store::CancelWrite {
    fn task_id(&self) -> &TaskId {
        &self.task_id
    }
    fn lease(&self) -> &Lease {
        &self.lease
    }
}
