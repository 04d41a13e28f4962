//! The answer step of a poll claim: a claim whose row carries an answer attempt
//! marked with its token sends it once, before it polls, and writes the outcome under the same
//! poll lease. Riding the poll claim keeps one remote caller per task, is fenced by the cancel
//! request like every poll, and lets the same claim observe what the answer changed.

use super::Engine;
use crate::policy::{bounded, MAX_STORED_ERROR};
use crate::ports::{Clock, Driver, DriverError, Launcher};
use crate::snapshot;
use crate::store::{AnswerWrite, Claimed, Store};
use crate::transitions::answer::{self, AnswerAction};

/// What the answer step of a claim did.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(super) enum AnswerStep {
    /// No answer to send, or it was sent (whatever the outcome).
    NoneOrSent,
    /// An answer waits: the server looked unavailable, so it was put back to pending. A poll
    /// the server answers then makes the task due at once, so the answer goes out next pass.
    Held,
}

impl<S: Store, D: Driver, L: Launcher, C: Clock> Engine<S, D, L, C> {
    /// Sends the claim's answer attempt, if it has one, and records the outcome. While the
    /// engine's polls find the task's server unavailable, the answer is not sent but put back
    /// to pending: a call that cannot be confirmed would spend the question's only attempt
    /// (DOMAIN §6, an answer is sent at most once), and the claim's poll probes the server.
    /// Returns whether the answer was held so.
    pub(super) async fn answer_step(&self, c: &Claimed) -> AnswerStep {
        if !answer::to_send(&c.row, c.lease.token) {
            return AnswerStep::NoneOrSent;
        }
        if self.server_down(&c.row.identity.server) {
            tracing::debug!(task = %c.row.id(), "answer held: the server is unavailable");
            self.finish_answer(c, AnswerAction::NotSent).await;
            return AnswerStep::Held;
        }
        let (Some(request_id), Some(text)) = (&c.row.answer.request_id, &c.row.answer.text) else {
            self.finish_answer(c, AnswerAction::Failed("no answer to send".into()))
                .await;
            return AnswerStep::NoneOrSent;
        };
        let handle = &c.row.identity.handle;
        let sent = self
            .driver
            .answer(&c.row.identity.server, handle, request_id, text)
            .await;
        let clean = |e: &DriverError| {
            let t = snapshot::storable(&e.to_string(), handle);
            let t = if text.expose().len() >= 6 {
                t.replace(text.expose(), "[redacted]")
            } else {
                t
            };
            bounded(&t, MAX_STORED_ERROR)
        };
        let action = match &sent {
            Ok(()) => AnswerAction::Sent,
            Err(e @ DriverError::Unavailable { .. }) => AnswerAction::Unconfirmed(clean(e)),
            Err(e) => AnswerAction::Failed(clean(e)),
        };
        tracing::debug!(task = %c.row.id(), token = ?c.lease.token, sent = sent.is_ok(), "answer sent");
        self.finish_answer(c, action).await;
        AnswerStep::NoneOrSent
    }

    /// A claim that makes no call puts its answer attempt back to pending.
    pub(super) async fn answer_not_sent(&self, c: &Claimed) {
        if answer::to_send(&c.row, c.lease.token) {
            self.finish_answer(c, AnswerAction::NotSent).await;
        }
    }

    /// Writes one answer outcome. A refused or failed write leaves the attempt `sending`; the
    /// next poll claim makes it `unconfirmed` (never sent again).
    async fn finish_answer(&self, c: &Claimed, action: AnswerAction) {
        let write = AnswerWrite {
            task_id: c.row.id().clone(),
            lease: c.lease.clone(),
            action,
        };
        match self
            .store
            .finish_answers(vec![write], self.clock.now())
            .await
        {
            Ok(outcomes) => {
                if let Some(Err(refusal)) = outcomes.first() {
                    tracing::debug!(task = %c.row.id(), ?refusal, "answer outcome refused");
                }
            }
            Err(e) => tracing::debug!(task = %c.row.id(), error = %e, "answer outcome not written"),
        }
    }
}
