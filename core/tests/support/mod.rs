//! Shared doubles and builders for the integration tests of tasklatch-core.
//!
//! - [`ManualClock`]: time the test owns (`Arc<Mutex<Timestamp>>`).
//! - [`ScriptedDriver`]: per remote id a queue of answers (the last one sticks), every call
//!   recorded, optional one-shot gates that hold a call until the test opens them.
//! - [`RecordingLauncher`]: the real [`MemLedger`] behind [`LedgerLauncher`], with every start and
//!   lookup recorded, scripted outcomes per task, auto-finished runs and a "hang after start".
//! - [`TestStore`]: the real [`MemStore`] behind an `Arc` (so several engines share it), with
//!   injectable insert faults and poisoned rows.
//! - [`World`]: all of the above wired together, with engines for any worker id.
//! - [`Capture`]: a tracing subscriber that keeps every log line and span field as text.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::{Debug, Write as _};
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tasklatch_core::engine::{Engine, SubmitCommand};
use tasklatch_core::event::{Event, Fingerprint};
use tasklatch_core::identity::Identity;
use tasklatch_core::ids::{IdSource, OwnerId, RunId, ServerId, TaskId, ThreadId, WorkerId};
use tasklatch_core::lease::{Lease, LeaseKind, LeaseToken};
use tasklatch_core::ledger::{LedgerLauncher, MemLedger, RunLedger, RunRecord};
use tasklatch_core::mem_store::MemStore;
use tasklatch_core::policy::Policy;
use tasklatch_core::ports::{
    Clock, Driver, DriverError, LaunchOutcome, Launcher, RunRequest, RunStatus, SubmitRequest,
    Submitted,
};
use tasklatch_core::remote::{ErrorClass, PollError, RemoteState};
use tasklatch_core::secret::{RemoteHandle, Secret};
use tasklatch_core::snapshot::RemoteReport;
use tasklatch_core::status::RemoteStatus;
use tasklatch_core::store::{
    AnswerOutcome, AnswerRequest, AnswerWrite, CancelOutcome, CancelRequeueOutcome, CancelTarget,
    CancelWrite, ClaimRequest, Claimed, HandOff, ListOrder, NotifyWrite, Overview, PollSooner,
    PollWrite, PolledSooner, PruneRequest, Pruned, Release, RequeueOutcome, Scope, Store,
    StoreError, SubmitSettled, SubmitSettlement, WriteOutcome,
};
use tasklatch_core::task::TaskRow;
use tasklatch_core::time::Timestamp;
use tokio::sync::Notify;

// ---------------------------------------------------------------------------------------------
// Time, ids, constants
// ---------------------------------------------------------------------------------------------

/// A fixed start of time for every test (2023-11-14T22:13:20Z).
pub const T0: Timestamp = Timestamp::from_micros(1_700_000_000_000_000);

/// A planted remote task id: must never reach any output.
pub const REMOTE_SECRET: &str = "RT-PLANTED-SECRET-0451";
/// A planted driver token: must never reach any output.
pub const DRIVER_SECRET: &str = "DRV-PLANTED-SECRET-0452";

/// `T0 + n` seconds.
pub fn at(n: u64) -> Timestamp {
    T0.plus(Duration::from_secs(n))
}

/// `n` seconds.
pub fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// A clock the test moves by hand.
#[derive(Clone)]
pub struct ManualClock(Arc<Mutex<Timestamp>>);

impl ManualClock {
    pub fn new(start: Timestamp) -> Self {
        ManualClock(Arc::new(Mutex::new(start)))
    }

    pub fn set(&self, t: Timestamp) {
        *lock(&self.0) = t;
    }

    pub fn advance(&self, d: Duration) -> Timestamp {
        let mut now = lock(&self.0);
        *now = now.plus(d);
        *now
    }

    pub fn advance_secs(&self, n: u64) -> Timestamp {
        self.advance(secs(n))
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        *lock(&self.0)
    }

    /// The manual time itself: these tests move their clock forward only.
    fn monotonic(&self) -> std::time::Duration {
        let micros = lock(&self.0).as_micros();
        std::time::Duration::from_micros(u64::try_from(micros).unwrap_or(0))
    }

    /// Moves the manual time forward by `d` at once.
    async fn sleep(&self, d: std::time::Duration) {
        self.advance(d);
    }
}

/// Ids `tsk_0001`, `tsk_0002`, … in call order.
#[derive(Default)]
pub struct SeqIds(Mutex<u32>);

impl IdSource for SeqIds {
    fn task_id(&self) -> TaskId {
        let mut n = lock(&self.0);
        *n += 1;
        TaskId(format!("tsk_{:04}", *n))
    }
}

pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Polls a future once with a no-op waker: `Some` if it completed.
pub fn poll_once<F: Future>(fut: F) -> Option<F::Output> {
    let mut fut = pin!(fut);
    match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => Some(v),
        Poll::Pending => None,
    }
}

/// Runs a future that never waits (every `MemStore` call) to completion.
pub fn ready<F: Future>(fut: F) -> F::Output {
    poll_once(fut).expect("the future was expected to complete without waiting")
}

// ---------------------------------------------------------------------------------------------
// Rows, events, reports
// ---------------------------------------------------------------------------------------------

pub const OWNER: &str = "alice";
pub const THREAD: &str = "th-1";
pub const SERVER: &str = "srv-1";

pub fn scope() -> Scope {
    scope_of(OWNER, THREAD)
}

pub fn scope_of(owner: &str, thread: &str) -> Scope {
    Scope {
        owner: owner.into(),
        thread: thread.into(),
    }
}

/// A handle whose driver data is the planted driver secret.
pub fn handle(remote_id: &str) -> RemoteHandle {
    RemoteHandle {
        remote_task_id: Secret::new(remote_id),
        driver_data: Secret::new(DRIVER_SECRET),
    }
}

/// The identity of task `task_id` owned by alice in th-1 on srv-1, handle `rt-{task_id}`.
pub fn identity(task_id: &str, name: &str) -> Identity {
    Identity {
        task_id: task_id.into(),
        owner: OWNER.into(),
        thread: THREAD.into(),
        server: SERVER.into(),
        name: name.to_owned(),
        handle: handle(&format!("rt-{task_id}")),
        created_at: T0,
    }
}

/// A remote state in `status` with no content.
pub fn state(status: RemoteStatus) -> RemoteState {
    RemoteState {
        status,
        ..RemoteState::submitted(T0)
    }
}

/// The fingerprinted event of `identity` in `status` (with `result`), as a poll would build it.
pub fn event_with(
    id: &Identity,
    status: RemoteStatus,
    result: Option<&str>,
) -> Option<(Event, Fingerprint)> {
    let remote = RemoteState {
        result: result.map(str::to_owned),
        ..state(status)
    };
    Event::build(id, &remote, None).map(Event::fingerprinted)
}

/// The fingerprinted degraded event of `identity` while `working`.
pub fn degraded_event(
    id: &Identity,
    class: ErrorClass,
    text: &str,
) -> Option<(Event, Fingerprint)> {
    let err = PollError {
        class,
        message: text.to_owned(),
    };
    Event::build(id, &state(RemoteStatus::Working), Some(&err)).map(Event::fingerprinted)
}

/// A well-formed report about `remote_id`.
pub fn report(remote_id: &str, status: &str) -> RemoteReport {
    RemoteReport {
        task_id: remote_id.to_owned(),
        status: status.to_owned(),
        ..Default::default()
    }
}

/// A completed report with a result.
pub fn completed(remote_id: &str, result: &str) -> RemoteReport {
    RemoteReport {
        result: Some(result.to_owned()),
        ..report(remote_id, "completed")
    }
}

/// A transient remote failure.
pub fn unavailable(class: ErrorClass, message: &str) -> DriverError {
    DriverError::Unavailable {
        class,
        message: message.to_owned(),
    }
}

pub fn lease(worker: &str, token: u64, expires_at: Timestamp) -> Lease {
    Lease {
        owner: worker.into(),
        token: LeaseToken(token),
        expires_at,
    }
}

// ---------------------------------------------------------------------------------------------
// ScriptedDriver
// ---------------------------------------------------------------------------------------------

/// A remote answer.
pub type Answer = Result<RemoteReport, DriverError>;

/// Which driver call.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum CallKind {
    Submit,
    GetStatus,
    Cancel,
    Answer,
}

/// A call the driver received (remote ids are recorded in the clear: this is the test's view).
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum DriverCall {
    Submit(String),
    GetStatus(String),
    Cancel(String),
    /// Remote id, request id and answer text.
    Answer(String, String, String),
}

/// Holds one call until the test opens it.
#[derive(Default)]
pub struct Gate {
    entered: Notify,
    release: Notify,
}

impl Gate {
    /// Resolves once the gated call has started.
    pub async fn entered(&self) {
        self.entered.notified().await
    }

    /// Lets the gated call go on.
    pub fn open(&self) {
        self.release.notify_one();
    }
}

#[derive(Default)]
struct DriverState {
    submits: VecDeque<Result<Submitted, DriverError>>,
    status: BTreeMap<String, VecDeque<Answer>>,
    cancels: BTreeMap<String, VecDeque<Answer>>,
    answers: BTreeMap<String, VecDeque<Result<(), DriverError>>>,
    gates: BTreeMap<(CallKind, String), Arc<Gate>>,
    calls: Vec<DriverCall>,
}

/// The remote server, scripted per remote id.
#[derive(Clone, Default)]
pub struct ScriptedDriver {
    state: Arc<Mutex<DriverState>>,
}

fn next_answer(queue: Option<&mut VecDeque<Answer>>) -> Option<Answer> {
    let queue = queue?;
    if queue.len() > 1 {
        queue.pop_front()
    } else {
        queue.front().cloned()
    }
}

impl ScriptedDriver {
    pub fn new() -> Self {
        Self::default()
    }

    /// The next submit returns this handle and first report.
    pub fn on_submit(&self, remote_id: &str, first: Option<RemoteReport>) {
        lock(&self.state).submits.push_back(Ok(Submitted {
            handle: handle(remote_id),
            report: first,
        }));
    }

    /// The next submit fails.
    pub fn on_submit_error(&self, error: DriverError) {
        lock(&self.state).submits.push_back(Err(error));
    }

    /// Queues status answers for `remote_id`; the last one keeps being given.
    pub fn on_status(&self, remote_id: &str, answers: impl IntoIterator<Item = Answer>) {
        lock(&self.state)
            .status
            .entry(remote_id.to_owned())
            .or_default()
            .extend(answers);
    }

    /// Replaces the status answers of `remote_id`.
    /// Scripts the outcomes of the next answers to `remote_id` (then `Ok`).
    pub fn on_answer(
        &self,
        remote_id: &str,
        outcomes: impl IntoIterator<Item = Result<(), DriverError>>,
    ) {
        lock(&self.state)
            .answers
            .entry(remote_id.to_owned())
            .or_default()
            .extend(outcomes);
    }

    /// Replaces the scripted outcomes of the next answers to `remote_id` (then `Ok`).
    pub fn set_answer_outcomes(
        &self,
        remote_id: &str,
        outcomes: impl IntoIterator<Item = Result<(), DriverError>>,
    ) {
        lock(&self.state)
            .answers
            .insert(remote_id.to_owned(), outcomes.into_iter().collect());
    }

    pub fn set_status(&self, remote_id: &str, answers: impl IntoIterator<Item = Answer>) {
        lock(&self.state)
            .status
            .insert(remote_id.to_owned(), answers.into_iter().collect());
    }

    /// Queues cancel answers for `remote_id` (default: a `cancelled` report).
    pub fn on_cancel(&self, remote_id: &str, answers: impl IntoIterator<Item = Answer>) {
        lock(&self.state)
            .cancels
            .entry(remote_id.to_owned())
            .or_default()
            .extend(answers);
    }

    /// Holds the next `kind` call about `remote_id` (any submit for [`CallKind::Submit`]) until
    /// the returned gate is opened.
    pub fn gate(&self, kind: CallKind, remote_id: &str) -> Arc<Gate> {
        let gate = Arc::new(Gate::default());
        lock(&self.state)
            .gates
            .insert((kind, remote_id.to_owned()), gate.clone());
        gate
    }

    pub fn calls(&self) -> Vec<DriverCall> {
        lock(&self.state).calls.clone()
    }

    pub fn status_calls(&self, remote_id: &str) -> usize {
        self.calls()
            .iter()
            .filter(|c| **c == DriverCall::GetStatus(remote_id.to_owned()))
            .count()
    }

    pub fn cancel_calls(&self, remote_id: &str) -> usize {
        self.calls()
            .iter()
            .filter(|c| **c == DriverCall::Cancel(remote_id.to_owned()))
            .count()
    }

    async fn pass_gate(&self, kind: CallKind, key: &str, call: DriverCall) {
        let gate = {
            let mut s = lock(&self.state);
            s.calls.push(call);
            s.gates.remove(&(kind, key.to_owned()))
        };
        if let Some(gate) = gate {
            gate.entered.notify_one();
            gate.release.notified().await;
        }
    }
}

impl Driver for ScriptedDriver {
    async fn submit(&self, req: &SubmitRequest) -> Result<Submitted, DriverError> {
        self.pass_gate(CallKind::Submit, "", DriverCall::Submit(req.name.clone()))
            .await;
        lock(&self.state)
            .submits
            .pop_front()
            .unwrap_or_else(|| Err(DriverError::Rejected("no scripted submit".into())))
    }

    async fn get_status(&self, _server: &ServerId, handle: &RemoteHandle) -> Answer {
        let id = handle.remote_task_id.expose().to_owned();
        self.pass_gate(CallKind::GetStatus, &id, DriverCall::GetStatus(id.clone()))
            .await;
        next_answer(lock(&self.state).status.get_mut(&id))
            .unwrap_or_else(|| Err(unavailable(ErrorClass::Server, "no scripted answer")))
    }

    async fn cancel(&self, _server: &ServerId, handle: &RemoteHandle) -> Answer {
        let id = handle.remote_task_id.expose().to_owned();
        self.pass_gate(CallKind::Cancel, &id, DriverCall::Cancel(id.clone()))
            .await;
        next_answer(lock(&self.state).cancels.get_mut(&id))
            .unwrap_or_else(|| Ok(report(&id, "cancelled")))
    }

    async fn answer(
        &self,
        _server: &ServerId,
        handle: &RemoteHandle,
        request_id: &str,
        answer: &tasklatch_core::secret::Secret,
    ) -> Result<(), DriverError> {
        let id = handle.remote_task_id.expose().to_owned();
        let call = DriverCall::Answer(id.clone(), request_id.into(), answer.expose().into());
        self.pass_gate(CallKind::Answer, &id, call).await;
        let mut state = lock(&self.state);
        match state.answers.get_mut(&id) {
            Some(q) => q.pop_front().unwrap_or(Ok(())),
            None => Ok(()),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// RecordingLauncher
// ---------------------------------------------------------------------------------------------

#[derive(Default)]
struct LauncherState {
    starts: Vec<(RunRequest, LaunchOutcome)>,
    lookups: Vec<RunId>,
    interrupts: Vec<RunId>,
    /// Scripted outcomes per task id, used instead of the ledger.
    scripted: BTreeMap<String, VecDeque<LaunchOutcome>>,
    /// Statuses given to newly created runs right after creation, in order.
    finish_new: VecDeque<RunStatus>,
    /// The status every newly created run gets when `finish_new` is empty.
    finish_default: Option<RunStatus>,
    /// Lookups that fail, per run id.
    failing_lookups: BTreeMap<RunId, u32>,
    /// The next start hangs forever after reaching the ledger.
    hang_next_start: bool,
    /// The next start for these tasks reaches the ledger, then answers `Failed` (reply lost).
    lose_reply: BTreeSet<String>,
    /// The next start waits for this gate before doing anything.
    gate: Option<Arc<Gate>>,
    /// The Agent Server is down: every start and lookup goes unanswered.
    down: bool,
}

struct LauncherInner {
    launcher: LedgerLauncher<MemLedger, ManualClock>,
    clock: ManualClock,
    state: Mutex<LauncherState>,
    started: Notify,
}

/// The launcher: the real run ledger behind a recorder.
#[derive(Clone)]
pub struct RecordingLauncher {
    inner: Arc<LauncherInner>,
}

/// The task id inside an idempotency key `task:{id}:{version}:{attempt}`.
pub fn key_task(key: &str) -> &str {
    key.split(':').nth(1).unwrap_or("")
}

impl RecordingLauncher {
    pub fn new(clock: ManualClock) -> Self {
        RecordingLauncher {
            inner: Arc::new(LauncherInner {
                launcher: LedgerLauncher::new(MemLedger::new(), clock.clone()),
                clock,
                state: Mutex::new(LauncherState::default()),
                started: Notify::new(),
            }),
        }
    }

    pub fn ledger(&self) -> &MemLedger {
        self.inner.launcher.ledger()
    }

    pub async fn create_thread(&self, owner: &str, thread: &str) {
        self.ledger()
            .create_thread(&OwnerId::from(owner), &ThreadId::from(thread), T0)
            .await
            .expect("create thread");
    }

    /// Takes the Agent Server down (every start and lookup unanswered) or brings it back.
    pub fn set_down(&self, down: bool) {
        lock(&self.inner.state).down = down;
    }

    /// The next starts for `task` answer these outcomes without reaching the ledger.
    pub fn script_starts(&self, task: &TaskId, outcomes: impl IntoIterator<Item = LaunchOutcome>) {
        lock(&self.inner.state)
            .scripted
            .entry(task.as_str().to_owned())
            .or_default()
            .extend(outcomes);
    }

    /// Newly created runs end at once with these statuses, in order.
    pub fn finish_new_runs(&self, statuses: impl IntoIterator<Item = RunStatus>) {
        lock(&self.inner.state).finish_new.extend(statuses);
    }

    /// Newly created runs end at once with `status` (after the queued ones).
    pub fn finish_every_new_run(&self, status: Option<RunStatus>) {
        lock(&self.inner.state).finish_default = status;
    }

    /// The next `n` lookups of `run` fail.
    pub fn fail_lookups(&self, run: &RunId, n: u32) {
        lock(&self.inner.state)
            .failing_lookups
            .insert(run.clone(), n);
    }

    /// The next start reaches the ledger, then never returns.
    pub fn hang_next_start(&self) {
        lock(&self.inner.state).hang_next_start = true;
    }

    /// The next start for `task` creates its run but the reply is lost: `Failed` is returned.
    pub fn lose_next_reply(&self, task: &TaskId) {
        lock(&self.inner.state)
            .lose_reply
            .insert(task.as_str().to_owned());
    }

    /// Holds the next start until the returned gate is opened.
    pub fn gate_next_start(&self) -> Arc<Gate> {
        let gate = Arc::new(Gate::default());
        lock(&self.inner.state).gate = Some(gate.clone());
        gate
    }

    /// Resolves once a hanging start has reached the ledger.
    pub async fn hung(&self) {
        self.inner.started.notified().await
    }

    pub fn starts(&self) -> Vec<(RunRequest, LaunchOutcome)> {
        lock(&self.inner.state).starts.clone()
    }

    pub fn starts_for(&self, task: &TaskId) -> Vec<(RunRequest, LaunchOutcome)> {
        self.starts()
            .into_iter()
            .filter(|(r, _)| key_task(&r.key) == task.as_str())
            .collect()
    }

    pub fn lookups(&self) -> Vec<RunId> {
        lock(&self.inner.state).lookups.clone()
    }

    /// The runs the engine asked to interrupt, in order.
    pub fn interrupts(&self) -> Vec<RunId> {
        lock(&self.inner.state).interrupts.clone()
    }

    pub async fn runs(&self) -> Vec<RunRecord> {
        self.ledger().runs().await.expect("ledger runs")
    }

    pub async fn runs_for(&self, task: &TaskId) -> Vec<RunRecord> {
        self.runs()
            .await
            .into_iter()
            .filter(|r| key_task(&r.key) == task.as_str())
            .collect()
    }

    pub async fn finish(&self, run: &RunId, status: RunStatus) -> bool {
        self.ledger()
            .finish_run(run, status, self.inner.clock.now())
            .await
            .expect("finish run")
    }
}

impl Launcher for RecordingLauncher {
    async fn start_run(&self, req: RunRequest) -> LaunchOutcome {
        let gate = lock(&self.inner.state).gate.take();
        if let Some(gate) = gate {
            gate.entered.notify_one();
            gate.release.notified().await;
        }
        if lock(&self.inner.state).down {
            let outcome = LaunchOutcome::Unavailable("cannot connect: connection refused".into());
            lock(&self.inner.state).starts.push((req, outcome.clone()));
            return outcome;
        }
        let scripted = lock(&self.inner.state)
            .scripted
            .get_mut(key_task(&req.key))
            .and_then(VecDeque::pop_front);
        let outcome = match scripted {
            Some(outcome) => outcome,
            None => {
                let before = self.ledger().runs().await.map(|r| r.len()).unwrap_or(0);
                let outcome = self.inner.launcher.start_run(req.clone()).await;
                let after = self.ledger().runs().await.map(|r| r.len()).unwrap_or(0);
                if let (LaunchOutcome::Started(run), true) = (&outcome, after > before) {
                    let finish = {
                        let mut s = lock(&self.inner.state);
                        s.finish_new.pop_front().or(s.finish_default)
                    };
                    if let Some(status) = finish {
                        self.finish(run, status).await;
                    }
                }
                let lost = lock(&self.inner.state)
                    .lose_reply
                    .remove(key_task(&req.key));
                if lost {
                    LaunchOutcome::Failed("reply lost".into())
                } else {
                    outcome
                }
            }
        };
        let hang = {
            let mut s = lock(&self.inner.state);
            s.starts.push((req, outcome.clone()));
            std::mem::take(&mut s.hang_next_start)
        };
        if hang {
            self.inner.started.notify_one();
            std::future::pending::<()>().await;
        }
        outcome
    }

    async fn run_status(&self, thread: &ThreadId, run: &RunId) -> Result<RunStatus, String> {
        let fail = {
            let mut s = lock(&self.inner.state);
            s.lookups.push(run.clone());
            if s.down {
                return Err("cannot connect: connection refused".into());
            }
            match s.failing_lookups.get_mut(run) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    true
                }
                _ => false,
            }
        };
        if fail {
            return Err("launcher lookup failed".into());
        }
        self.inner.launcher.run_status(thread, run).await
    }

    async fn interrupt_run(&self, thread: &ThreadId, run: &RunId) -> Result<(), String> {
        lock(&self.inner.state).interrupts.push(run.clone());
        self.inner.launcher.interrupt_run(thread, run).await
    }
}

// ---------------------------------------------------------------------------------------------
// TestStore
// ---------------------------------------------------------------------------------------------

/// What `insert_task` (a submit's intent) or the handle write of `settle_submit` does.
#[derive(Clone, Debug, Default)]
pub enum InsertFault {
    /// Writes.
    #[default]
    None,
    /// Fails with this error, writing nothing.
    Fail(StoreError),
    /// Writes, then answers with this error (a reply lost after the commit); once, then the
    /// fault is cleared.
    CommitThenFailOnce(StoreError),
    /// Never completes.
    Hang,
}

/// What `store_time` answers.
#[derive(Clone, Default)]
pub enum StoreClock {
    /// No clock (`Ok(None)`), as `MemStore`.
    #[default]
    None,
    /// This clock's time shifted by this many milliseconds.
    Follows(ManualClock, i64),
    /// The store is unreachable for this call.
    Unreadable,
}

#[derive(Default)]
struct StoreFaults {
    clock: StoreClock,
    insert: InsertFault,
    handle: InsertFault,
    poisoned: BTreeSet<TaskId>,
    poisoned_results: Vec<String>,
}

/// The real `MemStore`, shared, with injectable faults.
#[derive(Clone)]
pub struct TestStore {
    mem: Arc<MemStore>,
    faults: Arc<Mutex<StoreFaults>>,
    /// Per `list_tasks` call: the limit asked for and the rows returned.
    listings: Arc<Mutex<Vec<(usize, usize)>>>,
}

impl TestStore {
    pub fn new(policy: Policy) -> Self {
        TestStore {
            mem: Arc::new(MemStore::new(policy)),
            faults: Arc::new(Mutex::new(StoreFaults::default())),
            listings: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// Every `list_tasks` call so far: (limit asked for, rows returned).
    pub fn listings(&self) -> Vec<(usize, usize)> {
        lock(&self.listings).clone()
    }

    pub fn mem(&self) -> &MemStore {
        &self.mem
    }

    /// What `store_time` answers from now on.
    pub fn set_clock(&self, clock: StoreClock) {
        lock(&self.faults).clock = clock;
    }

    pub fn set_insert_fault(&self, fault: InsertFault) {
        lock(&self.faults).insert = fault;
    }

    /// What recording a submit's handle (`settle_submit` with a started row) does from now on.
    pub fn set_handle_fault(&self, fault: InsertFault) {
        lock(&self.faults).handle = fault;
    }

    /// The store is down for submits: the intent insert and the handle write both fail with
    /// `e` (or, with `None`, both work again).
    pub fn set_submit_outage(&self, e: Option<StoreError>) {
        let fault = e.map_or(InsertFault::None, InsertFault::Fail);
        let mut faults = lock(&self.faults);
        faults.insert = fault.clone();
        faults.handle = fault;
    }

    /// Any batch write that names `task` is rejected as a whole (`StoreError::Invalid`).
    pub fn poison(&self, task: &TaskId) {
        lock(&self.faults).poisoned.insert(task.clone());
    }

    /// Any poll batch carrying a remote result that contains `text` is rejected as a whole
    /// (`StoreError::Invalid`): a value the store cannot hold.
    pub fn poison_result(&self, text: &str) {
        lock(&self.faults).poisoned_results.push(text.to_owned());
    }

    fn check_poison<'a>(
        &self,
        ids: impl IntoIterator<Item = &'a TaskId>,
    ) -> Result<(), StoreError> {
        let faults = lock(&self.faults);
        if ids.into_iter().any(|id| faults.poisoned.contains(id)) {
            return Err(StoreError::Invalid("poisoned row".into()));
        }
        Ok(())
    }

    /// Every row, unscoped.
    pub async fn rows(&self) -> Vec<TaskRow> {
        self.mem.admin_rows(None, usize::MAX).await.expect("rows")
    }

    /// One row, unscoped.
    pub async fn row(&self, id: &TaskId) -> TaskRow {
        self.rows()
            .await
            .into_iter()
            .find(|r| r.id() == id)
            .expect("row exists")
    }
}

impl TestStore {
    /// The faults a batch of poll results meets: a poisoned row, or a result the store
    /// cannot hold.
    fn check_poll_faults(&self, writes: &[PollWrite]) -> Result<(), StoreError> {
        self.check_poison(writes.iter().map(|w| &w.task_id))?;
        let poisoned = writes.iter().any(|w| {
            let result = w.update.remote.result.as_deref().unwrap_or_default();
            let faults = lock(&self.faults);
            faults.poisoned_results.iter().any(|p| result.contains(p))
        });
        if poisoned {
            return Err(StoreError::Invalid("a result the store cannot hold".into()));
        }
        Ok(())
    }
}

impl Store for TestStore {
    async fn insert_task(&self, row: TaskRow) -> Result<(), StoreError> {
        let fault = lock(&self.faults).insert.clone();
        match fault {
            InsertFault::None => self.mem.insert_task(row).await,
            InsertFault::Fail(e) => Err(e),
            InsertFault::CommitThenFailOnce(e) => {
                lock(&self.faults).insert = InsertFault::None;
                self.mem.insert_task(row).await?;
                Err(e)
            }
            InsertFault::Hang => std::future::pending().await,
        }
    }

    async fn settle_submit(
        &self,
        task: &TaskId,
        settlement: SubmitSettlement,
        now: Timestamp,
    ) -> Result<SubmitSettled, StoreError> {
        if matches!(settlement, SubmitSettlement::Withdrawn) {
            // A withdrawal is a delete: it fails as the intent's insert does.
            if let InsertFault::Fail(e) = lock(&self.faults).insert.clone() {
                return Err(e);
            }
            return self.mem.settle_submit(task, settlement, now).await;
        }
        let fault = lock(&self.faults).handle.clone();
        match fault {
            InsertFault::None => self.mem.settle_submit(task, settlement, now).await,
            InsertFault::Fail(e) => Err(e),
            InsertFault::CommitThenFailOnce(e) => {
                lock(&self.faults).handle = InsertFault::None;
                self.mem.settle_submit(task, settlement, now).await?;
                Err(e)
            }
            InsertFault::Hang => std::future::pending().await,
        }
    }

    async fn claim(&self, kind: LeaseKind, req: ClaimRequest) -> Result<Vec<Claimed>, StoreError> {
        self.mem.claim(kind, req).await
    }

    async fn apply_polls(
        &self,
        writes: Vec<PollWrite>,
        now: Timestamp,
    ) -> Result<Vec<WriteOutcome>, StoreError> {
        self.check_poll_faults(&writes)?;
        self.mem.apply_polls(writes, now).await
    }

    async fn apply_polls_and_claim(
        &self,
        writes: Vec<PollWrite>,
        now: Timestamp,
        hand_off: HandOff,
    ) -> Result<(Vec<WriteOutcome>, Vec<Claimed>), StoreError> {
        self.check_poll_faults(&writes)?;
        self.mem.apply_polls_and_claim(writes, now, hand_off).await
    }

    async fn finish_notifications(
        &self,
        writes: Vec<NotifyWrite>,
        now: Timestamp,
    ) -> Result<Vec<WriteOutcome>, StoreError> {
        self.check_poison(writes.iter().map(|w| &w.task_id))?;
        self.mem.finish_notifications(writes, now).await
    }

    async fn finish_cancels(
        &self,
        writes: Vec<CancelWrite>,
        now: Timestamp,
    ) -> Result<Vec<WriteOutcome>, StoreError> {
        self.check_poison(writes.iter().map(|w| &w.task_id))?;
        self.mem.finish_cancels(writes, now).await
    }

    async fn release(
        &self,
        kind: LeaseKind,
        releases: Vec<Release>,
        now: Timestamp,
    ) -> Result<Vec<WriteOutcome>, StoreError> {
        self.mem.release(kind, releases, now).await
    }

    async fn request_cancel(
        &self,
        scope: &Scope,
        target: &CancelTarget,
        now: Timestamp,
    ) -> Result<CancelOutcome, StoreError> {
        self.mem.request_cancel(scope, target, now).await
    }

    async fn record_answer(
        &self,
        scope: &Scope,
        answer: AnswerRequest,
        now: Timestamp,
    ) -> Result<AnswerOutcome, StoreError> {
        self.mem.record_answer(scope, answer, now).await
    }

    async fn finish_answers(
        &self,
        writes: Vec<AnswerWrite>,
        now: Timestamp,
    ) -> Result<Vec<WriteOutcome>, StoreError> {
        self.check_poison(writes.iter().map(|w| &w.task_id))?;
        self.mem.finish_answers(writes, now).await
    }

    async fn list_tasks(
        &self,
        scope: &Scope,
        order: ListOrder,
        limit: usize,
    ) -> Result<Vec<TaskRow>, StoreError> {
        let r = self.mem.list_tasks(scope, order, limit).await;
        if let Ok(rows) = &r {
            lock(&self.listings).push((limit, rows.len()));
        }
        r
    }

    async fn get_task(&self, scope: &Scope, id: &TaskId) -> Result<Option<TaskRow>, StoreError> {
        self.mem.get_task(scope, id).await
    }

    async fn admin_rows(
        &self,
        after: Option<TaskId>,
        limit: usize,
    ) -> Result<Vec<TaskRow>, StoreError> {
        self.mem.admin_rows(after, limit).await
    }

    async fn overview(&self) -> Result<Overview, StoreError> {
        self.mem.overview().await
    }

    async fn requeue_dead_letter(
        &self,
        id: &TaskId,
        now: Timestamp,
    ) -> Result<RequeueOutcome, StoreError> {
        self.mem.requeue_dead_letter(id, now).await
    }

    async fn poll_sooner(&self, req: PollSooner) -> Result<PolledSooner, StoreError> {
        self.mem.poll_sooner(req).await
    }

    async fn requeue_cancel_dead_letter(
        &self,
        id: &TaskId,
        now: Timestamp,
    ) -> Result<CancelRequeueOutcome, StoreError> {
        self.mem.requeue_cancel_dead_letter(id, now).await
    }

    async fn prune_finished(&self, req: PruneRequest) -> Result<Pruned, StoreError> {
        self.mem.prune_finished(req).await
    }

    async fn store_time(&self) -> Result<Option<Timestamp>, StoreError> {
        let clock = lock(&self.faults).clock.clone();
        match clock {
            StoreClock::None => Ok(None),
            StoreClock::Follows(c, ms) => Ok(Some(Timestamp::from_micros(
                c.now().as_micros() + ms * 1_000,
            ))),
            StoreClock::Unreadable => Err(StoreError::Unavailable("clock unreadable".into())),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// World
// ---------------------------------------------------------------------------------------------

/// The engine type every scenario uses.
pub type TestEngine = Engine<TestStore, ScriptedDriver, RecordingLauncher, ManualClock>;

/// One store, one remote server, one launcher, one clock; engines for any worker id.
pub struct World {
    pub policy: Policy,
    pub clock: ManualClock,
    pub store: TestStore,
    pub driver: ScriptedDriver,
    pub launcher: RecordingLauncher,
    pub ids: SeqIds,
}

impl Default for World {
    fn default() -> Self {
        Self::new()
    }
}

impl World {
    pub fn new() -> Self {
        Self::with_policy(Policy::default())
    }

    pub fn with_policy(policy: Policy) -> Self {
        let clock = ManualClock::new(T0);
        World {
            store: TestStore::new(policy.clone()),
            driver: ScriptedDriver::new(),
            launcher: RecordingLauncher::new(clock.clone()),
            clock,
            policy,
            ids: SeqIds::default(),
        }
    }

    /// A world whose default thread (alice, th-1) exists in the run ledger.
    pub async fn with_thread() -> Self {
        let w = Self::new();
        w.launcher.create_thread(OWNER, THREAD).await;
        w
    }

    pub fn engine(&self, worker: &str) -> TestEngine {
        Engine::new(
            self.store.clone(),
            self.driver.clone(),
            self.launcher.clone(),
            self.clock.clone(),
            WorkerId::from(worker),
            self.policy.clone(),
        )
    }

    pub fn command(&self, name: &str) -> SubmitCommand {
        SubmitCommand {
            scope: scope(),
            server: SERVER.into(),
            name: name.to_owned(),
            tool: "job".into(),
            arguments: "{}".into(),
        }
    }

    /// Submits a task whose remote handle is `remote_id` (with an optional first report).
    pub async fn submit(
        &self,
        engine: &TestEngine,
        name: &str,
        remote_id: &str,
        first: Option<RemoteReport>,
    ) -> TaskId {
        self.driver.on_submit(remote_id, first);
        engine
            .submit(&self.ids, self.command(name))
            .await
            .expect("submit")
    }

    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    pub fn advance(&self, n: u64) -> Timestamp {
        self.clock.advance_secs(n)
    }

    pub async fn row(&self, id: &TaskId) -> TaskRow {
        self.store.row(id).await
    }
}

// ------------------------------------------------------------------------------------------
// a tracing subscriber that keeps every field of every span and event
// ------------------------------------------------------------------------------------------

/// A tracing subscriber that keeps every field of every span and event as text.
#[derive(Clone, Default)]
pub struct Capture {
    out: Arc<Mutex<String>>,
    ids: Arc<AtomicU64>,
}

struct Fields<'a>(&'a mut String);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn Debug) {
        let _ = write!(self.0, "{}={:?} ", field.name(), value);
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, attrs: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let mut out = lock(&self.out);
        let _ = write!(out, "\nspan {} ", attrs.metadata().name());
        attrs.record(&mut Fields(&mut out));
        tracing::span::Id::from_u64(self.ids.fetch_add(1, Ordering::SeqCst) + 1)
    }

    fn record(&self, _: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        values.record(&mut Fields(&mut lock(&self.out)));
    }

    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}

    fn event(&self, event: &tracing::Event<'_>) {
        let mut out = lock(&self.out);
        let _ = write!(out, "\n{} ", event.metadata().level());
        event.record(&mut Fields(&mut out));
    }

    fn enter(&self, _: &tracing::span::Id) {}

    fn exit(&self, _: &tracing::span::Id) {}
}

impl Capture {
    /// Everything captured so far.
    pub fn text(&self) -> String {
        lock(&self.out).clone()
    }
}
