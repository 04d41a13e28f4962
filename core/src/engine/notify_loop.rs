//! The notification loop (DOMAIN §3): claim undelivered work, check the failure budget, then
//! launch a run for the frozen snapshot (and wait a bounded while for its end, [`super::
//! run_confirm`]) or look at the run already dispatched.

use super::{ClockVerdict, Engine, LocalDeadline, LoopReport};
use crate::event::Event;
use crate::ids::{RunId, TaskId};
use crate::lease::LeaseKind;
use crate::mutation::{self, planted, Mutant};
use crate::policy::FAILURE_BUDGET;
use crate::ports::{Clock, Driver, LaunchOutcome, Launcher, RunRequest, RunStatus};
use crate::status::NotifyStatus;
use crate::store::{Claimed, NotifyWrite, Release, Store};
use crate::task::Outbox;
use crate::text::notification_prompt;
use crate::transitions::outbox::{idempotency_key, NotifyAction};
use futures::future::join_all;

enum NotifyStep {
    Write(NotifyWrite),
    Release(Release),
}

impl<S: Store, D: Driver, L: Launcher, C: Clock> Engine<S, D, L, C> {
    /// One pass of the notification loop: a fresh claim and the rows the poll loop's write
    /// already claimed (`handed_off`, each with its lease's deadline), acted on together — the
    /// claimed rows first, in due order — and written in one batch.
    pub(super) async fn notify_pass(
        &self,
        handed_off: Vec<(Claimed, LocalDeadline)>,
    ) -> LoopReport {
        let mut report = LoopReport::default();
        let (claimed, deadline, clock) = self
            .claim(LeaseKind::Notify, self.policy.notify_lease, &mut report)
            .await;
        let refused = clock == ClockVerdict::Refused;
        let refused = mutation::substitute(Mutant::HandOffIgnoresClockRefusal, refused, |_| false);
        if refused {
            // The rows the poll write handed off are under this worker's leases, but its clock
            // may not be trusted to keep inside them: they are given back, uncounted.
            let releases = handed_off
                .iter()
                .map(|(c, _)| self.release_of(c.row.id(), &c.lease, None))
                .collect();
            self.release_batch(LeaseKind::Notify, releases, &mut report)
                .await;
            return report;
        }
        report.claimed += handed_off.len();
        // The claimed rows first: they were due before the ones the poll write just opened.
        let work = claimed.into_iter().map(|c| (c, deadline)).chain(handed_off);
        let steps = join_all(work.map(|(c, d)| self.notify_one(c, d))).await;
        let (mut writes, mut releases) = (Vec::new(), Vec::new());
        for step in steps {
            match step {
                NotifyStep::Write(w) => writes.push(w),
                NotifyStep::Release(r) => releases.push(r),
            }
        }
        let now = self.clock.now();
        let rejected = self
            .write_batch(
                LeaseKind::Notify,
                writes,
                |b| self.store.finish_notifications(b, now),
                &mut report,
            )
            .await;
        self.release_rejected(LeaseKind::Notify, rejected, &mut report)
            .await;
        self.release_batch(LeaseKind::Notify, releases, &mut report)
            .await;
        report
    }

    async fn notify_one(&self, c: Claimed, deadline: LocalDeadline) -> NotifyStep {
        let o = &c.row.outbox;
        let write = |action| {
            NotifyStep::Write(NotifyWrite {
                task_id: c.row.id().clone(),
                lease: c.lease.clone(),
                dispatch_version: o.dispatch_version,
                action,
            })
        };
        let last_attempt = o.failures >= FAILURE_BUDGET && self.last_attempt_due(o);
        if last_attempt {
            tracing::info!(task = %c.row.id(), version = o.dispatch_version, failures = o.failures, "failure budget spent, but a run has succeeded since the last failed one: one last attempt");
        }
        let budget_spent = o.failures >= FAILURE_BUDGET && !last_attempt;
        let spent_before =
            mutation::substitute(Mutant::BudgetCheckedAfterLaunch, budget_spent, |_| false);
        if spent_before {
            log_failure(c.row.id(), o, &NotifyAction::BudgetExhausted);
            return write(NotifyAction::BudgetExhausted);
        }
        if !self.may_call_out(&c.lease, deadline) {
            return NotifyStep::Release(self.release_of(c.row.id(), &c.lease, None));
        }
        let action = match self.step(&c, deadline).await {
            Ok(action) => action,
            Err(release) => return NotifyStep::Release(release),
        };
        let action = mutation::substitute(Mutant::BudgetCheckedAfterLaunch, action, |action| {
            planted::budget_checked_late(action, budget_spent)
        });
        if action == NotifyAction::RunSucceeded {
            self.saw_run_success();
        }
        log_failure(c.row.id(), o, &action);
        write(action)
    }

    /// The step of claim `c` whose budget allows one: a look at the run already dispatched, or
    /// a launch for the frozen snapshot (after a look at a run an earlier attempt interrupted).
    /// `Err` is the release of a claim that cannot step (its row lacks what the step needs, or
    /// too little of its lease is left for the launch).
    async fn step(&self, c: &Claimed, deadline: LocalDeadline) -> Result<NotifyAction, Release> {
        let o = &c.row.outbox;
        if o.status == NotifyStatus::Dispatched {
            let Some(run) = &o.run_id else {
                let error = Some("dispatched without a run id".into());
                return Err(self.release_of(c.row.id(), &c.lease, error));
            };
            return Ok(self.dispatched_run(c, deadline, run).await);
        }
        let Some(event) = &o.dispatch_event else {
            let error = Some("claimed without a frozen snapshot".into());
            return Err(self.release_of(c.row.id(), &c.lease, error));
        };
        // A run an earlier attempt interrupted is looked at before anything is launched.
        let interrupted = o.run_id.clone();
        let interrupted =
            mutation::substitute(Mutant::InterruptedRunForgotten, interrupted, |_| None);
        let settled = match &interrupted {
            Some(run) => self.interrupted_run(c, deadline, run).await,
            None => None,
        };
        match settled {
            Some(action) => Ok(action),
            None if !self.may_call_out(&c.lease, deadline) => {
                Err(self.release_of(c.row.id(), &c.lease, None))
            }
            None => Ok(self.launch(c, deadline, event).await),
        }
    }

    /// A look at the run `run` dispatched for claim `c`.
    async fn dispatched_run(
        &self,
        c: &Claimed,
        deadline: LocalDeadline,
        run: &RunId,
    ) -> NotifyAction {
        let status = self.launcher.run_status(&c.row.identity.thread, run).await;
        let status =
            mutation::substitute(Mutant::MissingRunAwaited, status, planted::missing_as_going);
        match status {
            Ok(going @ (RunStatus::Pending | RunStatus::Running)) => {
                self.still_going(c, deadline, run, going).await
            }
            Ok(RunStatus::Success) => NotifyAction::RunSucceeded,
            Ok(failed) => NotifyAction::RunFailed(format!("run {run} ended: {}", failed.as_str())),
            Err(e) => NotifyAction::LookupUnavailable(e),
        }
    }

    /// Launches a run for the frozen snapshot `event` of claim `c` and waits a bounded while
    /// for its end.
    async fn launch(&self, c: &Claimed, deadline: LocalDeadline, event: &Event) -> NotifyAction {
        let req = RunRequest {
            key: idempotency_key(c.row.id(), &c.row.outbox),
            owner: c.row.identity.owner.clone(),
            thread: c.row.identity.thread.clone(),
            prompt: notification_prompt(event),
        };
        tracing::debug!(task = %c.row.id(), key = %req.key, token = ?c.lease.token, "launching");
        match self.launcher.start_run(req).await {
            LaunchOutcome::Started(run) => self.confirm_run(c, deadline, run).await,
            LaunchOutcome::Busy => NotifyAction::Busy,
            LaunchOutcome::ThreadGone => NotifyAction::ThreadGone,
            LaunchOutcome::Failed(e) => NotifyAction::LaunchFailed(e),
            LaunchOutcome::Unavailable(e) => NotifyAction::LaunchUnavailable(e),
        }
    }

    /// The run `run` an earlier attempt of claim `c` interrupted for outliving `max_run_life`
    /// ([`NotifyAction::RunOutlived`] keeps its id): its interrupt may have failed. Its success
    /// delivers the version; still going, it is handled as a dispatched run past its life;
    /// `None` when it ended without delivering, so a new attempt may launch.
    async fn interrupted_run(
        &self,
        c: &Claimed,
        deadline: LocalDeadline,
        run: &RunId,
    ) -> Option<NotifyAction> {
        match self.launcher.run_status(&c.row.identity.thread, run).await {
            Ok(RunStatus::Success) => {
                tracing::info!(task = %c.row.id(), run = %run, "an interrupted run succeeded after all: its version is delivered");
                Some(NotifyAction::RunSucceeded)
            }
            Ok(going @ (RunStatus::Pending | RunStatus::Running)) => {
                Some(self.still_going(c, deadline, run, going).await)
            }
            Ok(_) => None,
            Err(e) => Some(NotifyAction::LookupUnavailable(e)),
        }
    }

    /// A dispatched run found still `going`: looked at again later while it is younger than
    /// `max_run_life`; past it, interrupted through the launcher and counted as a failed
    /// attempt whose run is kept ([`NotifyAction::RunOutlived`]): the next attempt looks at it
    /// before launching, so a run whose interrupt failed and that then succeeds delivers its
    /// version, once.
    async fn still_going(
        &self,
        c: &Claimed,
        deadline: LocalDeadline,
        run: &RunId,
        going: RunStatus,
    ) -> NotifyAction {
        let Some(launched_at) = c.row.outbox.launched_at else {
            return NotifyAction::RunPending;
        };
        let age = self.clock.now().since(launched_at);
        let young = age < self.policy.max_run_life;
        let young = mutation::substitute(Mutant::StuckRunAwaited, young, |_| true);
        if young {
            return NotifyAction::RunPending;
        }
        // The lookup took a call of its own: the interrupt is a second one, and needs the margin
        // too (without it, the next claim interrupts).
        if !self.may_call_out(&c.lease, deadline) {
            return NotifyAction::RunPending;
        }
        let thread = &c.row.identity.thread;
        let interrupt = match self.launcher.interrupt_run(thread, run).await {
            Ok(()) => "interrupted".to_owned(),
            Err(e) => format!("its interrupt failed: {e}"),
        };
        NotifyAction::RunOutlived(format!(
            "run {run} still {} {} s after its launch (max_run_life {} s): {interrupt}",
            going.as_str(),
            age.as_secs(),
            self.policy.max_run_life.as_secs()
        ))
    }
}

/// Logs a failed step of a notification with its task, version and attempt: at `warn` each one
/// counted against the failure budget or ending the notification, and an unanswered launcher
/// once per episode (its first unanswered call; the rest at `debug`).
fn log_failure(task: &TaskId, o: &Outbox, action: &NotifyAction) {
    let (version, attempt) = (o.dispatch_version, o.dispatch_attempt);
    match action {
        NotifyAction::LaunchFailed(error) => {
            tracing::warn!(task = %task, version, attempt, error = %error, "notification launch failed")
        }
        NotifyAction::RunFailed(error) | NotifyAction::RunOutlived(error) => {
            tracing::warn!(task = %task, version, attempt, error = %error, "notification run failed")
        }
        NotifyAction::LaunchUnavailable(error) | NotifyAction::LookupUnavailable(error) => {
            if o.outages == 0 {
                tracing::warn!(task = %task, version, attempt, error = %error, "launcher unavailable: the notification waits it out (not a failure)")
            } else {
                tracing::debug!(task = %task, version, attempt, outages = o.outages, error = %error, "launcher still unavailable")
            }
        }
        NotifyAction::ThreadGone => {
            tracing::warn!(task = %task, version, "thread gone (404): notification dead-lettered")
        }
        NotifyAction::BudgetExhausted => {
            tracing::warn!(task = %task, version, failures = o.failures, "failure budget spent: notification dead-lettered")
        }
        NotifyAction::Launched(_)
        | NotifyAction::Busy
        | NotifyAction::RunSucceeded
        | NotifyAction::RunPending => {}
    }
}
