//! A remote-server double for the in-process API tests: every handle it hands out holds a
//! planted secret (the remote id and the driver data), which no answer of the API may carry.
//! What a started task first reports is the test's [`FirstReport`]; polls and cancels find no
//! task; answers are kept. It counts the submits it received, and with a [`Gate`] each submit
//! waits for a permit first.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use tasklatch_core::ids::{OwnerId, ServerId, ThreadId};
use tasklatch_core::ports::{Driver, DriverError, SubmitRequest, Submitted};
use tasklatch_core::secret::{RemoteHandle, Secret};
use tasklatch_core::snapshot::RemoteReport;
use tasklatch_worker::api::threads::{OwnerCheck, ThreadOwners};
use tokio::sync::{Notify, Semaphore};

/// What a task started with `tool` under remote id `id` reports first (or how its submit fails).
pub type FirstReport = fn(tool: &str, id: &str) -> Result<RemoteReport, DriverError>;

/// The answers the driver received: remote id, request id, text.
pub type Answers = Arc<Mutex<Vec<(String, String, String)>>>;

/// Holds each submit until a permit is added; `entered` tells that one is waiting.
#[derive(Clone)]
pub struct Gate {
    pub entered: Arc<Notify>,
    pub permits: Arc<Semaphore>,
}

/// See the module documentation. Remote ids are `<secret>-<n>`, driver data names
/// `<secret>-SESSION-<n>`.
pub struct PlantedDriver {
    secret: &'static str,
    first: FirstReport,
    gate: Option<Gate>,
    /// How many submits reached the driver.
    pub submits: Arc<AtomicU32>,
    /// What the answers carried, in order.
    pub answers: Answers,
}

impl PlantedDriver {
    pub fn new(secret: &'static str, first: FirstReport) -> Self {
        PlantedDriver {
            secret,
            first,
            gate: None,
            submits: Arc::default(),
            answers: Answers::default(),
        }
    }

    pub fn gated(mut self, gate: Gate) -> Self {
        self.gate = Some(gate);
        self
    }
}

/// `working`, whatever the tool.
pub fn working(_: &str, id: &str) -> Result<RemoteReport, DriverError> {
    Ok(report(id, "working"))
}

/// A report of `id` in `status`, nothing else said.
pub fn report(id: &str, status: &str) -> RemoteReport {
    RemoteReport {
        task_id: id.to_owned(),
        status: status.to_owned(),
        ..RemoteReport::default()
    }
}

/// The answers received so far.
pub fn answers_sent(answers: &Answers) -> Vec<(String, String, String)> {
    answers.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

impl Driver for PlantedDriver {
    async fn submit(&self, req: &SubmitRequest) -> Result<Submitted, DriverError> {
        if let Some(gate) = &self.gate {
            gate.entered.notify_one();
            let permit = gate.permits.acquire().await;
            permit.unwrap_or_else(|e| panic!("{e}")).forget();
        }
        let n = self.submits.fetch_add(1, Ordering::SeqCst);
        let id = format!("{}-{n}", self.secret);
        let first = (self.first)(&req.tool, &id)?;
        let session = format!("{{\"session\":\"{}-SESSION-{n}\"}}", self.secret);
        Ok(Submitted {
            report: Some(first),
            handle: RemoteHandle {
                remote_task_id: Secret::new(id),
                driver_data: Secret::new(session),
            },
        })
    }
    async fn get_status(
        &self,
        _: &ServerId,
        _: &RemoteHandle,
    ) -> Result<RemoteReport, DriverError> {
        Err(DriverError::UnknownTask)
    }
    async fn cancel(&self, _: &ServerId, _: &RemoteHandle) -> Result<RemoteReport, DriverError> {
        Err(DriverError::UnknownTask)
    }
    async fn answer(
        &self,
        _: &ServerId,
        handle: &RemoteHandle,
        request_id: &str,
        answer: &Secret,
    ) -> Result<(), DriverError> {
        let got = (
            handle.remote_task_id.expose().to_owned(),
            request_id.to_owned(),
            answer.expose().to_owned(),
        );
        self.answers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(got);
        Ok(())
    }
}

/// A thread belongs to the owner its id starts with (`alice-1` is alice's).
pub struct PrefixOwners;

impl ThreadOwners for PrefixOwners {
    fn usable<'a>(&'a self, owner: &'a OwnerId, thread: &'a ThreadId) -> OwnerCheck<'a> {
        let mine = thread.0.starts_with(&format!("{}-", owner.0));
        Box::pin(async move { Ok(mine) })
    }
}
