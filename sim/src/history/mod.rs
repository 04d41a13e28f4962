//! The history: an append-only record of what the world saw, Jepsen-style.
//!
//! Services record what they served (the store's answers, the remote server's reports, the
//! launcher's runs), worker ports record what the engine asked and got back, the user records
//! what users saw. The checker reads only this — never the engine's own bookkeeping.
//!
//! Each entry is one JSON line of the trace (`--trace`); the history hash is the sha256 of
//! those lines, so a trace file can be checked against a printed hash.

pub(crate) mod write_action;

use crate::history::write_action::WriteAction;
use crate::plan::naming::task_label;
use crate::plan::Feature;
use crate::wire::mcp::McpAnswer;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use tasklatch_core::lease::{LeaseKind, Refusal};
use tasklatch_core::ports::RunStatus;
use tasklatch_core::status::NotifyStatus;
use tasklatch_core::store::{AnswerOutcome, CancelOutcome, RequeueOutcome};
use tasklatch_core::text::{ContextEntry, PublicTask};

/// One line of the history.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct Entry {
    /// Simulated time since the start, in microseconds (the world's clock, never skewed).
    pub at_us: u64,
    /// The host that saw it.
    pub host: String,
    /// The task it is about (`task-{n}`), when known.
    pub task: Option<String>,
    /// What happened.
    #[serde(flatten)]
    pub event: Seen,
}

/// What a remote call was.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RemoteOp {
    /// Submit.
    Submit,
    /// Status poll.
    Status,
    /// Cancel.
    Cancel,
    /// Answer to a question (`tasks/update`).
    Answer,
}

/// What the gateway answered to a launch.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LaunchAnswer {
    /// The run for the key.
    Started {
        /// Run id.
        run: String,
    },
    /// 409.
    Busy,
    /// 404.
    Gone,
    /// A server error (the run may exist: see `created_run`).
    Error,
}

/// One row of a store write as the store answered it.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct RowWrite {
    /// Task id.
    pub task_id: String,
    /// The fencing token presented.
    pub token: u64,
    /// The dispatch version a notification write was guarded by.
    pub version: Option<u64>,
    /// The time the guard was checked against (completion time for polls, `now` otherwise).
    pub at_us: i64,
    /// The write's action.
    pub action: WriteAction,
    /// Accepted: versions and status after the write. Refused: why.
    pub outcome: Result<(u64, u64, NotifyStatus), Refusal>,
}

/// One claimed row as the store granted it.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Grant {
    /// Task id.
    pub task_id: String,
    /// The fresh fencing token.
    pub token: u64,
    /// When the lease expires (claimer's clock, epoch µs).
    pub expires_us: i64,
}

/// What happened.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", content = "payload", rename_all = "snake_case")]
pub enum Seen {
    /// The plan of the run (always the first entry: a trace carries its own plan).
    Plan {
        /// The plan.
        plan: Box<crate::plan::Plan>,
    },
    /// A phase began (`chaos`, `heal`, `settled`).
    Phase {
        /// Name.
        name: String,
    },
    /// A rule of the task row, checked in the engine's code, was found broken while a planted
    /// bug was active (never recorded otherwise: without one a broken rule is a panic).
    RowRuleBroken {
        /// The rule (`core::invariants::Invariant`'s name).
        rule: String,
    },
    /// A planned fault took effect for the first time.
    FaultFired {
        /// Index in the plan's fault list.
        index: usize,
    },
    /// A planned fault's window began (network faults, crashes).
    FaultStarted {
        /// Index in the plan's fault list.
        index: usize,
    },
    /// A planned fault's window ended.
    FaultEnded {
        /// Index in the plan's fault list.
        index: usize,
    },
    /// A feature of the workload took effect (hostile content served, a flap, a quirk…).
    Exercised {
        /// Coverage kind.
        what: Feature,
    },
    /// The gateway created a thread.
    ThreadCreated {
        /// Owner.
        owner: String,
        /// Thread.
        thread: String,
    },
    /// The user's engine assigned a task id to submit number `n`.
    SubmitSent {
        /// Task number.
        n: u32,
        /// Assigned id.
        task_id: String,
    },
    /// The user saw the submit's answer.
    SubmitAnswered {
        /// Task number.
        n: u32,
        /// What the user saw: the task id or the error text.
        answer: Result<String, String>,
    },
    /// A user sent a cancel request.
    CancelSent {
        /// Task number.
        n: u32,
        /// The requesting owner.
        by: String,
        /// Session (concurrent requests use different sessions).
        session: u32,
    },
    /// A user saw a cancel answer.
    CancelAnswered {
        /// Task number.
        n: u32,
        /// The requesting owner.
        by: String,
        /// What the user saw.
        answer: Result<CancelOutcome, String>,
    },
    /// A user sent an answer to a task's question: the owner, or another owner presenting
    /// the victim's exact thread, task id and request id.
    AnswerSent {
        /// Task number.
        n: u32,
        /// The answering owner.
        by: String,
        /// The request id answered.
        request_id: String,
        /// The answer (secret: it must reach the remote server and nothing else).
        text: String,
    },
    /// A user saw an answer's outcome.
    AnswerAnswered {
        /// Task number.
        n: u32,
        /// The answering owner.
        by: String,
        /// The answer sent (unique within a run: it names its sender, task, request and time).
        text: String,
        /// What the user saw.
        answer: Result<AnswerOutcome, String>,
    },
    /// A user listed a thread.
    Listed {
        /// Owner.
        owner: String,
        /// Thread.
        thread: String,
        /// What the user saw.
        answer: Result<Vec<PublicTask>, String>,
    },
    /// A user read a thread's run context (the per-run projection an agent is given).
    ContextRead {
        /// Owner.
        owner: String,
        /// Thread.
        thread: String,
        /// What the user saw.
        answer: Result<Vec<ContextEntry>, String>,
    },
    /// A user deleted a thread.
    ThreadDeleted {
        /// Owner.
        owner: String,
        /// Thread.
        thread: String,
    },
    /// The remote server created a task.
    RemoteCreated {
        /// Task number.
        n: u32,
        /// Remote id (secret).
        remote_id: String,
        /// Driver data (secret).
        driver_data: String,
    },
    /// The remote server answered task `n`'s submit with an earlier task's remote id (the
    /// duplicate-handle quirk): from then on two submits hold the same remote task.
    RemoteReused {
        /// The submitting task's number.
        n: u32,
        /// The earlier task's remote id (secret).
        remote_id: String,
    },
    /// The remote server answered a call.
    RemoteServed {
        /// Remote id.
        remote_id: String,
        /// Which call.
        op: RemoteOp,
        /// The answer.
        answer: McpAnswer,
        /// Whether the reply was dropped after the work was done.
        dropped: bool,
    },
    /// When the run ended: what the remote server would answer a poll of this task now, with
    /// no fault in the way — the truth the engine's last delivery must match.
    RemoteTruth {
        /// Remote id.
        remote_id: String,
        /// The answer.
        answer: McpAnswer,
        /// Whether a restart of the server forgot the task (an engine that had got a
        /// terminal report before stopped polling and settled on it).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        forgotten: bool,
    },
    /// The remote server took an answer.
    RemoteAnswered {
        /// Remote id.
        remote_id: String,
        /// The request id it named.
        request_id: String,
        /// The answer.
        text: String,
        /// Whether it answered the question the task was asking then (otherwise ignored).
        asked: bool,
    },
    /// A worker port called the remote server.
    PortRemote {
        /// Worker lane (`worker-1/0`).
        lane: String,
        /// Remote id.
        remote_id: String,
        /// Which call.
        op: RemoteOp,
        /// When the call started (µs since start); it ended at the entry's time.
        started_us: u64,
        /// Whether the port got an answer (any answer, including a remote error).
        answered: bool,
    },
    /// The gateway answered a launch.
    LaunchServed {
        /// Idempotency key.
        key: String,
        /// Owner.
        owner: String,
        /// Thread.
        thread: String,
        /// The hidden input.
        prompt: String,
        /// The answer.
        answer: LaunchAnswer,
        /// The run this request created, if it created one (even if it then failed).
        created_run: Option<String>,
        /// Whether the reply was dropped after the work was done.
        dropped: bool,
    },
    /// A worker port got a launch answer.
    PortLaunch {
        /// Worker lane.
        lane: String,
        /// Idempotency key.
        key: String,
        /// What the engine got: `started:<run>`, `busy`, `gone`, `failed`.
        outcome: String,
        /// When the call started (µs since start); it ended at the entry's time.
        started_us: u64,
    },
    /// A run ended at the gateway.
    RunEnded {
        /// Run id.
        run: String,
        /// Its key.
        key: String,
        /// How.
        status: RunStatus,
    },
    /// A worker port got a run lookup answer.
    PortLookup {
        /// Worker lane.
        lane: String,
        /// Run id.
        run: String,
        /// The status, or `error`.
        outcome: String,
        /// When the call started (µs since start); it ended at the entry's time.
        started_us: u64,
    },
    /// A worker port got the answer to an interrupt of a run (one that outlived the engine's
    /// `max_run_life`).
    PortInterrupt {
        /// Worker lane.
        lane: String,
        /// Run id.
        run: String,
        /// `interrupted`, or `error`.
        outcome: String,
        /// When the call started (µs since start); it ended at the entry's time.
        started_us: u64,
    },
    /// The store answered an insert.
    StoreInsert {
        /// Task id.
        task_id: String,
        /// Accepted: the event version; refused: the error.
        outcome: Result<u64, String>,
        /// Whether the reply was dropped.
        dropped: bool,
    },
    /// The store granted a claim.
    StoreClaim {
        /// Which loop.
        lease: LeaseKind,
        /// Claimer.
        worker: String,
        /// The rows and their leases.
        grants: Vec<Grant>,
        /// Whether the reply was dropped.
        dropped: bool,
    },
    /// The store answered a batched write.
    StoreWrite {
        /// Which loop's lease guards it.
        lease: LeaseKind,
        /// Rows.
        rows: Vec<RowWrite>,
        /// Whether the reply was dropped.
        dropped: bool,
    },
    /// The store answered a cancel request.
    StoreCancel {
        /// Owner.
        owner: String,
        /// Thread.
        thread: String,
        /// The outcome.
        outcome: CancelOutcome,
        /// Whether the reply was dropped.
        dropped: bool,
    },
    /// A store call failed inside the store.
    StoreError {
        /// The call.
        op: String,
        /// The error.
        error: String,
    },
    /// A worker host (re)started its software.
    HostStarted,
    /// The store answered an operator's requeue of a dead letter.
    StoreRequeue {
        /// Task id.
        task_id: String,
        /// The outcome (`Requeued(v)`: version `v` now carries the latest event again).
        outcome: RequeueOutcome,
        /// Whether the reply was dropped.
        dropped: bool,
    },
    /// `langgraph` mode: the gateway served a page of a thread's runs.
    RunsListed {
        /// Thread.
        thread: String,
        /// Runs skipped.
        offset: u32,
        /// Runs in the page (`None`: 404).
        count: Option<u32>,
    },
    /// `langgraph` mode: a run was created behind an active run of its thread (no `reject`
    /// strategy) — a notification queued instead of a 409.
    RunQueued {
        /// Run id.
        run: String,
        /// Its key.
        key: String,
    },
    /// `langgraph` mode: a pending or running run was cancelled with rollback (deleted: it
    /// delivers nothing).
    RunRolledBack {
        /// Run id.
        run: String,
        /// Its key.
        key: String,
    },
}

#[derive(Default)]
struct Inner {
    entries: Vec<Entry>,
    labels: BTreeMap<String, String>,
}

/// The shared, append-only history of one run.
#[derive(Clone, Default)]
pub struct History {
    inner: Arc<Mutex<Inner>>,
}

impl History {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records that `id` (a task id, remote id or key prefix) belongs to task number `n`.
    pub fn label(&self, id: &str, n: u32) {
        self.inner().labels.insert(id.to_owned(), task_label(n));
    }

    /// Gives `new_id` the label `known_id` has (a run id gets its key's task).
    pub fn alias(&self, new_id: &str, known_id: &str) {
        if let Some(label) = self.label_of(known_id) {
            self.inner().labels.insert(new_id.to_owned(), label);
        }
    }

    /// The `task-{n}` label of a task id, remote id, or idempotency key.
    pub fn label_of(&self, id: &str) -> Option<String> {
        let inner = self.inner();
        let id = key_task(id).unwrap_or(id);
        inner.labels.get(id).cloned()
    }

    /// Appends an event seen by `host` now (the current simulated time).
    pub fn record(&self, host: &str, task: Option<String>, event: Seen) {
        self.record_at(now_us(), host, task, event);
    }

    /// Appends an event seen at `at_us` (for the world itself, outside any host).
    pub fn record_at(&self, at_us: u64, host: &str, task: Option<String>, event: Seen) {
        self.inner().entries.push(Entry {
            at_us,
            host: host.to_owned(),
            task,
            event,
        });
    }

    /// Appends an event about the task that `id` names (task id, remote id or key).
    pub fn record_about(&self, host: &str, id: &str, event: Seen) {
        let task = self.label_of(id);
        self.record(host, task, event);
    }

    /// A copy of all entries so far.
    pub fn entries(&self) -> Vec<Entry> {
        self.inner().entries.clone()
    }

    /// Number of entries so far.
    pub fn len(&self) -> usize {
        self.inner().entries.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The trace: one JSON line per entry.
pub fn trace_lines(entries: &[Entry]) -> impl Iterator<Item = String> + '_ {
    entries
        .iter()
        .map(|e| serde_json::to_string(e).unwrap_or_default())
}

/// sha256 (hex) of the trace lines, each followed by a newline.
pub fn history_hash(entries: &[Entry]) -> String {
    let mut h = Sha256::new();
    for line in trace_lines(entries) {
        h.update(line.as_bytes());
        h.update(b"\n");
    }
    hex::encode(h.finalize())
}

/// The task id inside an idempotency key `task:{id}:{version}:{attempt}`.
pub fn key_task(key: &str) -> Option<&str> {
    key.strip_prefix("task:")
        .and_then(|rest| rest.split(':').next())
}

/// `(task id, version, attempt)` of an idempotency key.
pub fn parse_key(key: &str) -> Option<(&str, u64, u32)> {
    let mut parts = key.strip_prefix("task:")?.split(':');
    let id = parts.next()?;
    let version = parts.next()?.parse().ok()?;
    let attempt = parts.next()?.parse().ok()?;
    Some((id, version, attempt))
}

/// Simulated time since the start in µs (0 outside a simulation).
pub fn now_us() -> u64 {
    turmoil::sim_elapsed().map_or(0, |d| d.as_micros() as u64)
}
