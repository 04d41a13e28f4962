//! The bench's remote server: every task is completed at its first poll, so the end-to-end run
//! measures the engine, the store and the ledger, not a remote script.

use tasklatch_core::ids::ServerId;
use tasklatch_core::ports::{Driver, DriverError, SubmitRequest, Submitted};
use tasklatch_core::secret::RemoteHandle;
use tasklatch_core::snapshot::RemoteReport;

/// A remote server whose tasks are all done (see the module documentation). Submits are
/// refused: the bench inserts its rows in bulk.
#[derive(Clone)]
pub struct DoneDriver;

impl Driver for DoneDriver {
    async fn submit(&self, _req: &SubmitRequest) -> Result<Submitted, DriverError> {
        Err(DriverError::Rejected("the bench does not submit".into()))
    }

    async fn get_status(
        &self,
        _server: &ServerId,
        handle: &RemoteHandle,
    ) -> Result<RemoteReport, DriverError> {
        Ok(RemoteReport {
            task_id: handle.remote_task_id.expose().to_owned(),
            status: "completed".into(),
            result: Some("{\"ok\":true,\"rows\":42}".into()),
            ..Default::default()
        })
    }

    async fn cancel(
        &self,
        _server: &ServerId,
        handle: &RemoteHandle,
    ) -> Result<RemoteReport, DriverError> {
        Ok(RemoteReport {
            task_id: handle.remote_task_id.expose().to_owned(),
            status: "cancelled".into(),
            ..Default::default()
        })
    }
}
