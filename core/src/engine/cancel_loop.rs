//! The cancel loop (DOMAIN §6): claim requested cancels, check the cancel budget, call the
//! remote cancel, apply the terminal snapshot it returns (one normal notification follows) — or,
//! when the server only acknowledges the cancel (a non-terminal report), apply that report and
//! let polling learn the end. A server that does not answer is waited out, never counted
//! (DOMAIN §6): only a refusal spends the cancel budget.

use super::intent::IntentStep;
use super::{Engine, LocalDeadline, LoopReport};
use crate::lease::LeaseKind;
use crate::policy::{bounded, CANCEL_BUDGET, MAX_STORED_ERROR};
use crate::ports::{Clock, Driver, DriverError, Launcher};
use crate::snapshot::{self, ProtocolError};
use crate::store::{CancelWrite, Claimed, Release, Store};
use crate::transitions::cancel::CancelAction;
use crate::transitions::poll;
use crate::transitions::submit::awaits_handle;
use futures::future::join_all;

enum CancelStep {
    Write(Box<CancelWrite>),
    Release(Release),
}

impl<S: Store, D: Driver, L: Launcher, C: Clock> Engine<S, D, L, C> {
    pub(super) async fn cancel_pass(&self) -> LoopReport {
        let mut report = LoopReport::default();
        let (claimed, deadline, _) = self
            .claim(LeaseKind::Cancel, self.policy.cancel_lease, &mut report)
            .await;
        let steps = join_all(claimed.into_iter().map(|c| self.cancel_one(c, deadline))).await;
        let (mut writes, mut releases) = (Vec::new(), Vec::new());
        for step in steps {
            match step {
                CancelStep::Write(w) => writes.push(*w),
                CancelStep::Release(r) => releases.push(r),
            }
        }
        let now = self.clock.now();
        let rejected = self
            .write_batch(
                LeaseKind::Cancel,
                writes,
                |b| self.store.finish_cancels(b, now),
                &mut report,
            )
            .await;
        self.release_rejected(LeaseKind::Cancel, rejected, &mut report)
            .await;
        self.release_batch(LeaseKind::Cancel, releases, &mut report)
            .await;
        report
    }

    async fn cancel_one(&self, c: Claimed, deadline: LocalDeadline) -> CancelStep {
        let write = |action| {
            CancelStep::Write(Box::new(CancelWrite {
                task_id: c.row.id().clone(),
                lease: c.lease.clone(),
                action,
            }))
        };
        if awaits_handle(&c.row) {
            return match self.intent_step(&c) {
                IntentStep::Wait(release) => CancelStep::Release(release),
                IntentStep::Untracked(update, _) => write(CancelAction::Finished(update)),
            };
        }
        if c.row.cancel.failures >= CANCEL_BUDGET {
            tracing::warn!(task = %c.row.id(), failures = c.row.cancel.failures, "cancel budget spent: cancel dead-lettered, polling resumes");
            return write(CancelAction::BudgetExhausted);
        }
        if !self.may_call_out(&c.lease, deadline) {
            return CancelStep::Release(self.release_of(c.row.id(), &c.lease, None));
        }
        let handle = &c.row.identity.handle;
        let answer = self.driver.cancel(&c.row.identity.server, handle).await;
        let at = self.clock.now();
        let update = |report| Box::new(poll::on_report(&c.row, report, at, &self.policy));
        let finished = |report| CancelAction::Finished(update(report));
        let action = match answer {
            Ok(report) => match snapshot::validate(&report, handle) {
                Ok(obs) if obs.status.is_terminal() => finished(Ok(obs)),
                Ok(obs) => CancelAction::Acknowledged(update(Ok(obs))),
                Err(protocol) => finished(Err(protocol)),
            },
            Err(DriverError::UnknownTask) => finished(Err(ProtocolError::UnknownTask)),
            Err(DriverError::Malformed(detail)) => finished(Err(ProtocolError::Malformed(
                bounded(&snapshot::storable(&detail, handle), MAX_STORED_ERROR),
            ))),
            Err(e @ DriverError::Rejected(_)) => {
                let error = snapshot::storable(&e.to_string(), handle);
                tracing::warn!(task = %c.row.id(), failures = c.row.cancel.failures + 1, error = %error, "remote cancel refused");
                CancelAction::Failed(error)
            }
            Err(e @ DriverError::Unavailable { .. }) => {
                let error = snapshot::storable(&e.to_string(), handle);
                unavailable_logged(&c, &error);
                CancelAction::Unavailable(error)
            }
        };
        tracing::debug!(task = %c.row.id(), token = ?c.lease.token, "remote cancel answered");
        write(action)
    }
}

/// One warning per outage episode (the first unanswered cancel); the retries of the same
/// episode are debug lines.
fn unavailable_logged(c: &Claimed, error: &str) {
    let (task, outages) = (c.row.id(), c.row.cancel.outages);
    if outages == 0 {
        tracing::warn!(task = %task, error = %error, "remote server unavailable: the cancel waits it out, no failure counted");
    } else {
        tracing::debug!(task = %task, outages, error = %error, "remote server still unavailable for the cancel");
    }
}
