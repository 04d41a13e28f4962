//! Shared by the real-peer and fake-server tests: starting peers (a peer that cannot start is
//! a test failure quoting the harness's message, never a skip), a driver for one server,
//! polling, and an engine world with a real clock and the in-memory run ledger.
#![allow(dead_code)]

pub mod fake;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tasklatch_core::engine::{Engine, SubmitCommand};
use tasklatch_core::ids::{OwnerId, RunId, SeededIds, ServerId, TaskId, ThreadId, WorkerId};
use tasklatch_core::ledger::{LedgerError, LedgerLauncher, MemLedger, RunLedger, RunRecord};
use tasklatch_core::policy::Policy;
use tasklatch_core::ports::{
    Clock, Driver, LaunchOutcome, RunRequest, RunStatus, SubmitRequest, Submitted,
};
use tasklatch_core::secret::RemoteHandle;
use tasklatch_core::snapshot::RemoteReport;
use tasklatch_core::store::{Scope, Store};
use tasklatch_core::task::TaskRow;
use tasklatch_core::time::Timestamp;
use tasklatch_mcp::{McpConfig, McpDriver, Protocol, ServerConfig};
use tasklatch_peers::PeerProcess;

/// The server id every test driver uses.
pub const SERVER: &str = "s";

/// The fastmcp fixture app (tasks extension).
pub fn start_fastmcp() -> PeerProcess {
    let app = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/servers/tasks_extension_app.py");
    tasklatch_peers::start_fastmcp(&app, &[])
        .unwrap_or_else(|e| panic!("the fastmcp peer could not start:\n{e}"))
}

/// server-everything (legacy tasks).
pub fn start_everything() -> PeerProcess {
    tasklatch_peers::start_everything()
        .unwrap_or_else(|e| panic!("the server-everything peer could not start:\n{e}"))
}

/// A driver for one server at `url`.
pub fn driver(url: &str, protocol: Protocol) -> McpDriver {
    driver_with(ServerConfig::new(url).with_protocol(protocol))
}

/// A driver for one configured server.
pub fn driver_with(mut server: ServerConfig) -> McpDriver {
    server.request_timeout_ms = 5_000;
    let mut config = McpConfig::default();
    config.servers.insert(SERVER.into(), server);
    McpDriver::new(config).expect("a valid configuration")
}

pub fn server() -> ServerId {
    ServerId::from(SERVER)
}

/// Submits `tool` with `arguments` (JSON text) to the test server.
pub async fn submit(d: &McpDriver, tool: &str, arguments: &str) -> Submitted {
    d.submit(&submit_request(tool, arguments))
        .await
        .unwrap_or_else(|e| panic!("submit {tool}: {e}"))
}

pub fn submit_request(tool: &str, arguments: &str) -> SubmitRequest {
    SubmitRequest {
        server: server(),
        owner: OwnerId::from("alice"),
        name: format!("{tool} job"),
        tool: tool.into(),
        arguments: arguments.into(),
    }
}

/// Polls until `done` holds for a report (at most `within`), returning it.
pub async fn poll_until(
    d: &McpDriver,
    handle: &RemoteHandle,
    within: Duration,
    done: impl Fn(&RemoteReport) -> bool,
) -> RemoteReport {
    let deadline = Instant::now() + within;
    loop {
        let report = d
            .get_status(&server(), handle)
            .await
            .unwrap_or_else(|e| panic!("get_status: {e}"));
        if done(&report) {
            return report;
        }
        assert!(
            Instant::now() < deadline,
            "not reached in time; last report {report:?}"
        );
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
}

/// The wall clock, in whole microseconds.
#[derive(Clone, Copy)]
pub struct RealClock;

impl Clock for RealClock {
    fn now(&self) -> Timestamp {
        let micros = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as i64)
            .unwrap_or_default();
        Timestamp::from_micros(micros)
    }

    fn monotonic(&self) -> std::time::Duration {
        static ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        ORIGIN.get_or_init(std::time::Instant::now).elapsed()
    }

    async fn sleep(&self, d: std::time::Duration) {
        tokio::time::sleep(d).await;
    }
}

/// An in-memory run ledger shared by the engine's launcher and the test.
#[derive(Clone, Default)]
pub struct SharedLedger(pub Arc<MemLedger>);

impl RunLedger for SharedLedger {
    async fn create_thread(
        &self,
        o: &OwnerId,
        t: &ThreadId,
        now: Timestamp,
    ) -> Result<(), LedgerError> {
        self.0.create_thread(o, t, now).await
    }
    async fn delete_thread(&self, t: &ThreadId, now: Timestamp) -> Result<bool, LedgerError> {
        self.0.delete_thread(t, now).await
    }
    async fn start_run(
        &self,
        req: &RunRequest,
        now: Timestamp,
    ) -> Result<LaunchOutcome, LedgerError> {
        self.0.start_run(req, now).await
    }
    async fn finish_run(
        &self,
        run: &RunId,
        s: RunStatus,
        now: Timestamp,
    ) -> Result<bool, LedgerError> {
        self.0.finish_run(run, s, now).await
    }
    async fn run_status(&self, run: &RunId) -> Result<RunStatus, LedgerError> {
        self.0.run_status(run).await
    }
    async fn runs(&self) -> Result<Vec<RunRecord>, LedgerError> {
        self.0.runs().await
    }
}

pub type TestEngine<S> = Engine<S, McpDriver, LedgerLauncher<SharedLedger, RealClock>, RealClock>;

/// Short timings so a real-time test settles in seconds.
pub fn fast_policy() -> Policy {
    Policy {
        poll_interval: Duration::from_millis(200),
        max_poll_backoff: Duration::from_secs(2),
        run_check_interval: Duration::from_millis(100),
        run_confirm_wait: Duration::from_millis(400),
        retry_base: Duration::from_millis(200),
        max_retry_backoff: Duration::from_secs(2),
        release_backoff: Duration::from_millis(200),
        ..Policy::default()
    }
}

/// An engine over `store` and `driver` with one thread for alice.
pub struct World<S: Store> {
    pub engine: TestEngine<S>,
    pub ledger: SharedLedger,
    pub ids: SeededIds,
}

pub fn scope() -> Scope {
    Scope {
        owner: OwnerId::from("alice"),
        thread: ThreadId::from("thread-1"),
    }
}

impl<S: Store> World<S> {
    pub async fn new(store: S, driver: McpDriver) -> Self {
        let ledger = SharedLedger::default();
        let s = scope();
        ledger
            .create_thread(&s.owner, &s.thread, RealClock.now())
            .await
            .unwrap();
        let launcher = LedgerLauncher::new(ledger.clone(), RealClock);
        let engine = Engine::new(
            store,
            driver,
            launcher,
            RealClock,
            WorkerId::from("w1"),
            fast_policy(),
        );
        World {
            engine,
            ledger,
            ids: SeededIds::new(7),
        }
    }

    pub async fn submit(&self, tool: &str, arguments: &str) -> TaskId {
        let cmd = SubmitCommand {
            scope: scope(),
            server: server(),
            name: format!("{tool} job"),
            tool: tool.into(),
            arguments: arguments.into(),
        };
        self.engine
            .submit(&self.ids, cmd)
            .await
            .unwrap_or_else(|e| panic!("submit {tool}: {e}"))
    }

    pub async fn row(&self, id: &TaskId) -> TaskRow {
        self.engine
            .store()
            .get_task(&scope(), id)
            .await
            .unwrap()
            .expect("the task exists")
    }

    /// One pass, then every run still going ends successfully (the agent read its note).
    pub async fn pass(&self) {
        self.engine.run_once().await;
        for run in self.ledger.runs().await.unwrap() {
            if run.status.is_active() {
                self.ledger
                    .finish_run(&run.run_id, RunStatus::Success, RealClock.now())
                    .await
                    .unwrap();
            }
        }
    }

    /// Passes every 50 ms until `done` holds for the task's row (at most `within`).
    pub async fn until(
        &self,
        id: &TaskId,
        within: Duration,
        done: impl Fn(&TaskRow) -> bool,
    ) -> TaskRow {
        let deadline = Instant::now() + within;
        loop {
            self.pass().await;
            let row = self.row(id).await;
            if done(&row) {
                return row;
            }
            assert!(
                Instant::now() < deadline,
                "task {id} not settled in time: {:?}",
                row.remote
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Passes for `span` more (every 50 ms).
    pub async fn idle(&self, span: Duration) {
        let end = Instant::now() + span;
        while Instant::now() < end {
            self.pass().await;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The runs started for task `id`, in order.
    pub async fn runs_for(&self, id: &TaskId) -> Vec<RunRecord> {
        let prefix = format!("task:{id}:");
        self.ledger
            .runs()
            .await
            .unwrap()
            .into_iter()
            .filter(|r| r.key.starts_with(&prefix))
            .collect()
    }
}

/// The task is terminal and its latest event was delivered.
pub fn settled(row: &TaskRow) -> bool {
    row.remote.status.is_terminal() && row.outbox.notified_version == row.outbox.event_version
}
