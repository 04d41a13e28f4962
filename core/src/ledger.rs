//! The run ledger: the launcher's own source of truth (DOMAIN §3 "Delivery").
//!
//! A run is keyed by its idempotency key, which is unique: the same key always yields the same
//! run, across processes. A thread with an active run answers 409 instead of queueing; a missing
//! or deleted thread answers 404 and nothing is created. [`MemLedger`] is the executable
//! specification; the Postgres adapter keeps the same contract with a unique index.
//! [`LedgerLauncher`] turns any ledger into a [`Launcher`].

use crate::ids::{OwnerId, RunId, ThreadId};
use crate::mutation::{self, planted, Mutant};
use crate::ports::{Clock, LaunchOutcome, Launcher, RunRequest, RunStatus};
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Mutex, MutexGuard};

/// A run as the ledger keeps it.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct RunRecord {
    /// The run.
    pub run_id: RunId,
    /// Its idempotency key.
    pub key: String,
    /// The thread's owner.
    pub owner: OwnerId,
    /// The thread it runs on.
    pub thread: ThreadId,
    /// The hidden input it was started with.
    pub prompt: String,
    /// Where it is.
    pub status: RunStatus,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it ended.
    pub finished_at: Option<Timestamp>,
}

impl RunStatus {
    /// Pending or running: the thread is busy.
    pub fn is_active(self) -> bool {
        matches!(self, RunStatus::Pending | RunStatus::Running)
    }
}

/// A ledger call that could not complete (the ledger's storage failed).
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error, Serialize, Deserialize)]
#[error("run ledger unavailable: {0}")]
pub struct LedgerError(pub String);

/// The run ledger contract. Every method is atomic.
pub trait RunLedger: Send + Sync {
    /// Creates `thread` for `owner`; a no-op if it exists (even if deleted: deletion is final).
    fn create_thread(
        &self,
        owner: &OwnerId,
        thread: &ThreadId,
        now: Timestamp,
    ) -> impl Future<Output = Result<(), LedgerError>> + Send;
    /// Deletes `thread`: later launches on it answer 404. Returns whether it existed.
    fn delete_thread(
        &self,
        thread: &ThreadId,
        now: Timestamp,
    ) -> impl Future<Output = Result<bool, LedgerError>> + Send;
    /// Starts the run for `req.key`: the existing run for a known key (whatever the thread's
    /// state now); else 404 when the thread is missing, deleted or another owner's; else 409
    /// when a run is active on the thread; else a new running run.
    fn start_run(
        &self,
        req: &RunRequest,
        now: Timestamp,
    ) -> impl Future<Output = Result<LaunchOutcome, LedgerError>> + Send;
    /// Ends an active run with a terminal `status`. Returns false (and changes nothing) if the
    /// run is unknown or already ended.
    fn finish_run(
        &self,
        run: &RunId,
        status: RunStatus,
        now: Timestamp,
    ) -> impl Future<Output = Result<bool, LedgerError>> + Send;
    /// A run's status; [`RunStatus::Missing`] for an unknown run.
    fn run_status(
        &self,
        run: &RunId,
    ) -> impl Future<Output = Result<RunStatus, LedgerError>> + Send;
    /// Every run, in creation order.
    fn runs(&self) -> impl Future<Output = Result<Vec<RunRecord>, LedgerError>> + Send;
}

#[derive(Default)]
struct Ledger {
    threads: BTreeMap<ThreadId, (OwnerId, bool)>,
    runs: Vec<RunRecord>,
    by_key: BTreeMap<String, usize>,
}

/// The in-memory run ledger.
#[derive(Default)]
pub struct MemLedger {
    inner: Mutex<Ledger>,
}

impl MemLedger {
    /// An empty ledger.
    pub fn new() -> Self {
        Self::default()
    }

    fn inner(&self) -> MutexGuard<'_, Ledger> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl RunLedger for MemLedger {
    async fn create_thread(
        &self,
        owner: &OwnerId,
        thread: &ThreadId,
        _now: Timestamp,
    ) -> Result<(), LedgerError> {
        self.inner()
            .threads
            .entry(thread.clone())
            .or_insert((owner.clone(), false));
        Ok(())
    }

    async fn delete_thread(&self, thread: &ThreadId, _now: Timestamp) -> Result<bool, LedgerError> {
        Ok(match self.inner().threads.get_mut(thread) {
            Some((_, deleted)) => {
                *deleted = true;
                true
            }
            None => false,
        })
    }

    async fn start_run(
        &self,
        req: &RunRequest,
        now: Timestamp,
    ) -> Result<LaunchOutcome, LedgerError> {
        let mut l = self.inner();
        let seen = l.by_key.get(&req.key).copied();
        let seen = mutation::substitute(Mutant::LedgerUniquenessDropped, seen, |_| None);
        if let Some(i) = seen {
            return Ok(LaunchOutcome::Started(l.runs[i].run_id.clone()));
        }
        let thread = l.threads.get(&req.thread);
        let open = thread.is_some_and(|(owner, deleted)| *owner == req.owner && !deleted);
        let open = mutation::substitute(Mutant::LedgerIgnoresThreadDeletion, open, |_| {
            planted::deletion_ignored(thread, &req.owner)
        });
        if !open {
            return Ok(LaunchOutcome::ThreadGone);
        }
        if l.runs
            .iter()
            .any(|r| r.thread == req.thread && r.status.is_active())
        {
            return Ok(LaunchOutcome::Busy);
        }
        let run_id = RunId(format!("run-{}", l.runs.len() + 1));
        l.runs.push(RunRecord {
            run_id: run_id.clone(),
            key: req.key.clone(),
            owner: req.owner.clone(),
            thread: req.thread.clone(),
            prompt: req.prompt.clone(),
            status: RunStatus::Running,
            created_at: now,
            finished_at: None,
        });
        let index = l.runs.len() - 1;
        l.by_key.insert(req.key.clone(), index);
        Ok(LaunchOutcome::Started(run_id))
    }

    async fn finish_run(
        &self,
        run: &RunId,
        status: RunStatus,
        now: Timestamp,
    ) -> Result<bool, LedgerError> {
        let mut l = self.inner();
        match l.runs.iter_mut().find(|r| &r.run_id == run) {
            Some(r)
                if r.status.is_active() && !status.is_active() && status != RunStatus::Missing =>
            {
                r.status = status;
                r.finished_at = Some(now);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn run_status(&self, run: &RunId) -> Result<RunStatus, LedgerError> {
        Ok(self
            .inner()
            .runs
            .iter()
            .find(|r| &r.run_id == run)
            .map_or(RunStatus::Missing, |r| r.status))
    }

    async fn runs(&self) -> Result<Vec<RunRecord>, LedgerError> {
        Ok(self.inner().runs.clone())
    }
}

/// A [`Launcher`] over a run ledger and a clock.
pub struct LedgerLauncher<Led, C> {
    ledger: Led,
    clock: C,
}

impl<Led: RunLedger, C: Clock> LedgerLauncher<Led, C> {
    /// Launches runs in `ledger`, stamped with `clock`.
    pub fn new(ledger: Led, clock: C) -> Self {
        LedgerLauncher { ledger, clock }
    }

    /// The ledger.
    pub fn ledger(&self) -> &Led {
        &self.ledger
    }
}

impl<Led: RunLedger, C: Clock> Launcher for LedgerLauncher<Led, C> {
    async fn start_run(&self, req: RunRequest) -> LaunchOutcome {
        match self.ledger.start_run(&req, self.clock.now()).await {
            Ok(outcome) => outcome,
            Err(e) => LaunchOutcome::Failed(e.to_string()),
        }
    }

    async fn run_status(&self, _thread: &ThreadId, run: &RunId) -> Result<RunStatus, String> {
        self.ledger.run_status(run).await.map_err(|e| e.to_string())
    }

    /// Ends the run as interrupted in the ledger; a run already ended (or unknown) is over too.
    async fn interrupt_run(&self, _thread: &ThreadId, run: &RunId) -> Result<(), String> {
        self.ledger
            .finish_run(run, RunStatus::Interrupted, self.clock.now())
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(key: &str, thread: &str) -> RunRequest {
        RunRequest {
            key: key.into(),
            owner: "alice".into(),
            thread: thread.into(),
            prompt: "p".into(),
        }
    }

    #[tokio::test]
    async fn same_key_same_run_busy_thread_409_missing_thread_404() {
        let l = MemLedger::new();
        let now = Timestamp::EPOCH;
        l.create_thread(&"alice".into(), &"t1".into(), now)
            .await
            .unwrap();
        let a = l.start_run(&req("k1", "t1"), now).await.unwrap();
        assert_eq!(a, LaunchOutcome::Started(RunId("run-1".into())));
        assert_eq!(l.start_run(&req("k1", "t1"), now).await.unwrap(), a);
        assert_eq!(
            l.start_run(&req("k2", "t1"), now).await.unwrap(),
            LaunchOutcome::Busy
        );
        assert_eq!(
            l.start_run(&req("k3", "nope"), now).await.unwrap(),
            LaunchOutcome::ThreadGone
        );
        assert!(l
            .finish_run(&RunId("run-1".into()), RunStatus::Success, now)
            .await
            .unwrap());
        assert!(!l
            .finish_run(&RunId("run-1".into()), RunStatus::Error, now)
            .await
            .unwrap());
        assert_eq!(
            l.run_status(&RunId("run-1".into())).await.unwrap(),
            RunStatus::Success
        );
        assert_eq!(
            l.run_status(&RunId("run-9".into())).await.unwrap(),
            RunStatus::Missing
        );
        assert!(matches!(
            l.start_run(&req("k2", "t1"), now).await.unwrap(),
            LaunchOutcome::Started(_)
        ));
    }

    #[tokio::test]
    async fn deleted_or_foreign_thread_is_gone_but_known_keys_still_answer() {
        let l = MemLedger::new();
        let now = Timestamp::EPOCH;
        l.create_thread(&"alice".into(), &"t1".into(), now)
            .await
            .unwrap();
        let a = l.start_run(&req("k1", "t1"), now).await.unwrap();
        let foreign = RunRequest {
            owner: "mallory".into(),
            ..req("k9", "t1")
        };
        assert_eq!(
            l.start_run(&foreign, now).await.unwrap(),
            LaunchOutcome::ThreadGone
        );
        assert!(l.delete_thread(&"t1".into(), now).await.unwrap());
        assert_eq!(
            l.start_run(&req("k2", "t1"), now).await.unwrap(),
            LaunchOutcome::ThreadGone
        );
        assert_eq!(l.start_run(&req("k1", "t1"), now).await.unwrap(), a);
        l.create_thread(&"alice".into(), &"t1".into(), now)
            .await
            .unwrap();
        assert_eq!(
            l.start_run(&req("k3", "t1"), now).await.unwrap(),
            LaunchOutcome::ThreadGone,
            "deletion is final"
        );
    }
}
