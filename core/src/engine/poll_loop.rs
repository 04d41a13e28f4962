//! The poll loop (DOMAIN §4): claim due tasks, ask the remote server, apply what it says.
//!
//! A poll result the store rejects even alone (a value it cannot hold) is not retried as it is:
//! the row gets a failed poll instead ([`poll::on_failure`] with the store's answer), so the
//! error is counted, the next poll backs off further each time and, from the third in a row,
//! the task's tracking is reported degraded. Only if the store rejects that too is the lease
//! released, at the release backoff.

use super::answer_step::AnswerStep;
use super::intent::IntentStep;
use super::{Engine, LocalDeadline, LoopReport};
use crate::lease::LeaseKind;
use crate::policy::DEGRADED_AFTER;
use crate::ports::{Clock, Driver, DriverError, Launcher};
use crate::remote::{ErrorClass, PollError};
use crate::snapshot::{self, ProtocolError, RemoteReport};
use crate::store::{Claimed, HandOff, PollWrite, Release, Store, StoreError};
use crate::task::TaskRow;
use crate::time::Timestamp;
use crate::transitions::poll::{self, PollUpdate};
use crate::transitions::submit::awaits_handle;
use futures::future::join_all;
use std::sync::Mutex;

enum PollStep {
    Write(Box<PollWrite>),
    Release(Release),
}

impl<S: Store, D: Driver, L: Launcher, C: Clock> Engine<S, D, L, C> {
    /// One pass of the poll loop. The results' write also claims the notification of every
    /// row whose new version opened the channel ([`Store::apply_polls_and_claim`]); those
    /// claims go to `handed_off`, with the deadline of their notification lease, for this
    /// pass's notification loop.
    pub(super) async fn poll_pass(
        &self,
        handed_off: &mut Vec<(Claimed, LocalDeadline)>,
    ) -> LoopReport {
        let mut report = LoopReport::default();
        let (claimed, deadline, _) = self
            .claim(LeaseKind::Poll, self.policy.poll_lease, &mut report)
            .await;
        let steps = join_all(claimed.iter().map(|c| self.poll_one(c, deadline))).await;
        let (mut writes, mut releases) = (Vec::new(), Vec::new());
        for step in steps {
            match step {
                PollStep::Write(w) => writes.push(*w),
                PollStep::Release(r) => releases.push(r),
            }
        }
        let now = self.clock.now();
        // Measured before the write that may grant the notification leases, as a claim's is.
        let notify_deadline = LocalDeadline::after(&self.clock, self.policy.notify_lease);
        let hand_off = (!self.shutting_down()).then(|| HandOff {
            worker: self.worker.clone(),
            now,
            lease_for: self.policy.notify_lease,
        });
        let taken = Mutex::new(Vec::new());
        let write = |b| {
            let (hand_off, taken) = (hand_off.clone(), &taken);
            async move {
                let Some(hand_off) = hand_off else {
                    return self.store.apply_polls(b, now).await;
                };
                let (outcomes, claimed) =
                    self.store.apply_polls_and_claim(b, now, hand_off).await?;
                taken
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .extend(claimed);
                Ok(outcomes)
            }
        };
        let rejected = self
            .write_batch(LeaseKind::Poll, writes, &write, &mut report)
            .await;
        let failures = rejected
            .into_iter()
            .filter_map(|(w, e)| {
                let row = claimed.iter().find(|c| c.row.id() == &w.task_id)?;
                Some(self.failed_write(&row.row, w, &e))
            })
            .collect();
        let rejected = self
            .write_batch(LeaseKind::Poll, failures, &write, &mut report)
            .await;
        self.release_rejected(LeaseKind::Poll, rejected, &mut report)
            .await;
        self.release_batch(LeaseKind::Poll, releases, &mut report)
            .await;
        let taken = taken.into_inner().unwrap_or_else(|p| p.into_inner());
        handed_off.extend(taken.into_iter().map(|c| (c, notify_deadline)));
        self.recover_servers().await;
        report
    }

    /// A failed poll in place of a result the store rejected: counted like any poll error.
    fn failed_write(&self, row: &TaskRow, rejected: PollWrite, error: &StoreError) -> PollWrite {
        let error = PollError {
            class: ErrorClass::Server,
            message: snapshot::storable(
                &format!("the poll result could not be stored: {error}"),
                &row.identity.handle,
            ),
        };
        PollWrite {
            update: poll::on_failure(row, error, rejected.completed_at, &self.policy),
            ..rejected
        }
    }

    async fn poll_one(&self, c: &Claimed, deadline: LocalDeadline) -> PollStep {
        if awaits_handle(&c.row) {
            return match self.intent_step(c) {
                IntentStep::Wait(release) => PollStep::Release(release),
                IntentStep::Untracked(update, at) => PollStep::Write(Box::new(PollWrite {
                    task_id: c.row.id().clone(),
                    lease: c.lease.clone(),
                    completed_at: at,
                    update: *update,
                })),
            };
        }
        if !self.may_call_out(&c.lease, deadline) {
            self.answer_not_sent(c).await;
            return PollStep::Release(self.release_of(c.row.id(), &c.lease, None));
        }
        let answer_step = self.answer_step(c).await;
        // The answer took a call of its own: the poll is a second one, and needs the margin too.
        if !self.may_call_out(&c.lease, deadline) {
            return PollStep::Release(self.release_of(c.row.id(), &c.lease, None));
        }
        let handle = &c.row.identity.handle;
        let answer = self.driver.get_status(&c.row.identity.server, handle).await;
        let at = self.clock.now();
        let unanswered = matches!(
            answer,
            Err(DriverError::Unavailable { .. } | DriverError::Malformed(_))
        );
        self.poll_saw(&c.row.identity.server, !unanswered, at);
        let mut update = self.update_of(c, answer, at);
        if answer_step == AnswerStep::Held && !unanswered {
            // The server answers again: the held answer goes out with the next pass.
            update.next_poll_at = update.next_poll_at.map(|t| t.min(at));
        }
        tracing::debug!(task = %c.row.id(), token = ?c.lease.token, status = %update.remote.status, errors = update.consecutive_errors, "polled");
        if let Some(error) = update
            .last_error
            .as_ref()
            .filter(|_| update.consecutive_errors == DEGRADED_AFTER)
        {
            tracing::warn!(task = %c.row.id(), errors = update.consecutive_errors, class = error.class.as_str(), error = %error.message, "polls keep failing: tracking degraded");
        }
        PollStep::Write(Box::new(PollWrite {
            task_id: c.row.id().clone(),
            lease: c.lease.clone(),
            completed_at: at,
            update,
        }))
    }

    /// The poll write's update for what the server answered (`answer`, at `at`).
    fn update_of(
        &self,
        c: &Claimed,
        answer: Result<RemoteReport, DriverError>,
        at: Timestamp,
    ) -> PollUpdate {
        let handle = &c.row.identity.handle;
        match answer {
            Ok(report) => {
                let checked = snapshot::validate(&report, handle);
                if let Err(broken) = &checked {
                    log_protocol_error(c, broken);
                }
                poll::on_report(&c.row, checked, at, &self.policy)
            }
            Err(DriverError::UnknownTask) => {
                log_protocol_error(c, &ProtocolError::UnknownTask);
                poll::on_report(&c.row, Err(ProtocolError::UnknownTask), at, &self.policy)
            }
            Err(DriverError::Malformed(detail)) => {
                let detail = snapshot::storable(&detail, handle);
                let update = poll::on_malformed(&c.row, &detail, at, &self.policy);
                if update.remote.status.is_terminal() {
                    log_protocol_error(c, &ProtocolError::Malformed(detail));
                }
                update
            }
            Err(DriverError::Unavailable { class, message }) => {
                let error = PollError {
                    class,
                    message: snapshot::storable(&message, handle),
                };
                poll::on_failure(&c.row, error, at, &self.policy)
            }
            Err(DriverError::Rejected(message)) => {
                let error = PollError {
                    class: ErrorClass::Server,
                    message: snapshot::storable(&message, handle),
                };
                poll::on_failure(&c.row, error, at, &self.policy)
            }
        }
    }
}

/// A report that broke the protocol ends the task as failed: logged with its task.
fn log_protocol_error(c: &Claimed, broken: &ProtocolError) {
    tracing::warn!(task = %c.row.id(), error = %broken, "the remote report broke the protocol: task marked failed");
}
