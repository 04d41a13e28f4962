//! Who a task belongs to and what it is: fixed at submit, never changed afterwards.

use crate::ids::{OwnerId, ServerId, TaskId, ThreadId};
use crate::secret::RemoteHandle;
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

/// Who a task belongs to and what it is. Never changes after submit.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Identity {
    /// Local task id.
    pub task_id: TaskId,
    /// The user who owns the task.
    pub owner: OwnerId,
    /// The conversation that started it; notifications are runs on this thread.
    pub thread: ThreadId,
    /// The remote server it runs on.
    pub server: ServerId,
    /// A human name, untrusted (neutralised before it reaches a model).
    pub name: String,
    /// The remote handle: secret.
    pub handle: RemoteHandle,
    /// When the task was persisted.
    pub created_at: Timestamp,
}
