//! The wake-up latency bench's remote server: every submit is answered inline with a finished
//! task, so the task is born with its first event and a notification due at once — the time
//! from that commit to the run's start is what the bench measures.

use tasklatch_core::ids::ServerId;
use tasklatch_core::ports::{Driver, DriverError, SubmitRequest, Submitted};
use tasklatch_core::secret::{RemoteHandle, Secret};
use tasklatch_core::snapshot::RemoteReport;

/// A remote server whose tool calls all finish inline (see the module documentation).
#[derive(Clone)]
pub struct InlineDriver;

impl Driver for InlineDriver {
    async fn submit(&self, req: &SubmitRequest) -> Result<Submitted, DriverError> {
        let remote_id = format!("inline-{}", req.name);
        Ok(Submitted {
            handle: RemoteHandle {
                remote_task_id: Secret::new(remote_id.clone()),
                driver_data: Secret::new(String::new()),
            },
            report: Some(RemoteReport {
                task_id: remote_id,
                status: "completed".into(),
                result: Some("{\"ok\":true}".into()),
                ..Default::default()
            }),
        })
    }

    async fn get_status(
        &self,
        _server: &ServerId,
        _handle: &RemoteHandle,
    ) -> Result<RemoteReport, DriverError> {
        Err(DriverError::Rejected(
            "inline tasks are never polled".into(),
        ))
    }

    async fn cancel(
        &self,
        _server: &ServerId,
        _handle: &RemoteHandle,
    ) -> Result<RemoteReport, DriverError> {
        Err(DriverError::Rejected(
            "inline tasks are never cancelled".into(),
        ))
    }
}
