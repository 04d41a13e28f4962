//! The `mcp` host's state: the remote tasks it keeps (with what it answered about each), the
//! tasks a restart forgot, and what its faults and secrets need to carry between requests.

use super::marks::AnswerTally;
use super::model::RemoteTask;
use crate::plan::generate::Stream;
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::AtomicU64;

/// A remote task the server keeps, with what it answered about it so far.
pub(super) struct Hosted {
    /// The task.
    pub(super) task: RemoteTask,
    /// What the server answered about it so far, for coverage.
    pub(super) tally: AnswerTally,
}

/// The server's state; shared with the world so settling can compare it with the store.
pub struct McpState {
    /// The tasks it keeps, by remote id.
    pub(super) tasks: BTreeMap<String, Hosted>,
    /// Tasks a restart forgot: remote id → plan task number of the creator.
    pub(super) forgotten: BTreeMap<String, u32>,
    /// Restarts (fault indexes) already applied.
    pub(super) restarts: BTreeSet<usize>,
    /// Draws each new task's secrets.
    pub(super) rng: ChaCha8Rng,
    /// Replies served, counted for lost-replies faults.
    pub(super) replies: AtomicU64,
}

impl McpState {
    /// An empty server seeded from the plan.
    pub fn new(seed: u64) -> Self {
        McpState {
            tasks: BTreeMap::new(),
            forgotten: BTreeMap::new(),
            restarts: BTreeSet::new(),
            rng: Stream::McpHost.rng(seed),
            replies: AtomicU64::default(),
        }
    }

    /// The task with this remote id.
    pub fn task(&self, remote_id: &str) -> Option<&RemoteTask> {
        self.tasks.get(remote_id).map(|hosted| &hosted.task)
    }
}
