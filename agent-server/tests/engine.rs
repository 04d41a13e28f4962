//! The whole delivery path with real parts: two `Engine`s (wall clock, short timings) over one
//! `PgStore`, each with its own `AgentServerLauncher`, against a real `langgraph dev`; only the
//! remote tool server is a scripted double (the Agent Server is what is under test here).
//!
//! 50 tasks, each on its own thread, go through three state changes, one at a time: polls fail
//! until tracking is degraded (v1), then the task asks for input (v2), then the user cancels
//! and the server reports it completed (v3). Every state change must arrive exactly once, as a
//! successful run on the task's own thread — counted on the server, from its run lists — whose
//! input holds the framed event and never the remote task id or driver data. On a few threads
//! the user is talking to the agent (a slow run of their own) when v2 arrives: the launch is
//! refused with 409, nothing is queued, and v2 is delivered once the thread is free.

mod support;

use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use support::{input_message, LangGraph};
use tasklatch_agent_server::wire::{KEY_FIELD, NOTIFICATION_FLAG};
use tasklatch_agent_server::AgentServerLauncher;
use tasklatch_core::engine::{Engine, SubmitCommand};
use tasklatch_core::ids::{SeededIds, ServerId, TaskId, ThreadId, WorkerId};
use tasklatch_core::policy::Policy;
use tasklatch_core::ports::{Clock, Driver, DriverError, SubmitRequest, Submitted};
use tasklatch_core::secret::{RemoteHandle, Secret};
use tasklatch_core::snapshot::RemoteReport;
use tasklatch_core::store::{CancelOutcome, CancelTarget, Scope, Store};
use tasklatch_core::task::ErrorClass;
use tasklatch_core::text::{BEGIN_MARKER, NOTIFICATION_INSTRUCTION};
use tasklatch_core::time::Timestamp;
use tasklatch_pg::harness::TestDb;
use tasklatch_pg::PgStore;
use tokio::task::JoinHandle;

const TASKS: usize = 50;
const ENGINES: usize = 2;
const STAGE_LIMIT: Duration = Duration::from_secs(180);
/// Threads where the user's own slow run holds the thread when v2 is launched.
const BUSY_THREADS: usize = 3;
const REMOTE_SECRET: &str = "RT-SECRET";
const DRIVER_SECRET: &str = "DRV-SECRET";

/// The wall clock: time as the operating system tells it.
#[derive(Clone, Copy)]
struct WallClock;

impl Clock for WallClock {
    fn now(&self) -> Timestamp {
        let micros = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros());
        Timestamp::from_micros(i64::try_from(micros).unwrap_or(i64::MAX))
    }

    fn monotonic(&self) -> std::time::Duration {
        static ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        ORIGIN.get_or_init(std::time::Instant::now).elapsed()
    }

    async fn sleep(&self, d: std::time::Duration) {
        tokio::time::sleep(d).await;
    }
}

/// The remote tool server double. Stage 0: every poll fails (tracking degrades after three).
/// Stage 1: every task asks for input. A cancel answers "completed" (the task finished first).
#[derive(Clone, Default)]
struct ScriptedDriver {
    stage: Arc<AtomicU8>,
    next: Arc<AtomicU32>,
    names: Arc<Mutex<BTreeMap<String, String>>>,
}

impl ScriptedDriver {
    fn name_of(&self, handle: &RemoteHandle) -> Result<(String, String), DriverError> {
        let id = handle.remote_task_id.expose().to_owned();
        let names = self.names.lock().unwrap_or_else(|p| p.into_inner());
        match names.get(&id) {
            Some(name) => Ok((id, name.clone())),
            None => Err(DriverError::UnknownTask),
        }
    }
}

impl Driver for ScriptedDriver {
    async fn submit(&self, req: &SubmitRequest) -> Result<Submitted, DriverError> {
        let n = self.next.fetch_add(1, Ordering::SeqCst);
        let id = format!("{REMOTE_SECRET}-{n:03}-7f3a9c");
        self.names
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.clone(), req.name.clone());
        let handle = RemoteHandle {
            remote_task_id: Secret::new(id),
            driver_data: Secret::new(format!("{DRIVER_SECRET}-{n:03}-token")),
        };
        Ok(Submitted {
            handle,
            report: None,
        })
    }

    async fn get_status(
        &self,
        _server: &ServerId,
        handle: &RemoteHandle,
    ) -> Result<RemoteReport, DriverError> {
        let (id, name) = self.name_of(handle)?;
        if self.stage.load(Ordering::SeqCst) == 0 {
            return Err(DriverError::Unavailable {
                class: ErrorClass::Server,
                message: format!("upstream 503 while asking about {id}"),
            });
        }
        Ok(RemoteReport {
            task_id: id,
            status: "input_required".into(),
            input_request: Some(format!("{name}: which colour?")),
            ..RemoteReport::default()
        })
    }

    async fn cancel(
        &self,
        _server: &ServerId,
        handle: &RemoteHandle,
    ) -> Result<RemoteReport, DriverError> {
        let (id, name) = self.name_of(handle)?;
        Ok(RemoteReport {
            task_id: id,
            status: "completed".into(),
            result: Some(format!("{name}: painted blue")),
            ..RemoteReport::default()
        })
    }
}

fn policy() -> Policy {
    Policy {
        poll_interval: Duration::from_millis(100),
        max_poll_backoff: Duration::from_millis(400),
        poll_lease: Duration::from_secs(30),
        notify_lease: Duration::from_secs(30),
        cancel_lease: Duration::from_secs(30),
        run_check_interval: Duration::from_millis(100),
        run_confirm_wait: Duration::from_millis(400),
        retry_base: Duration::from_millis(100),
        max_retry_backoff: Duration::from_secs(1),
        release_backoff: Duration::from_millis(100),
        min_lease_left: Duration::from_secs(15),
        batch_size: 64,
        max_run_life: Duration::from_secs(60),
        max_clock_skew: Duration::from_secs(2),
        submit_grace: Duration::from_secs(60),
        max_unavailable: Duration::from_secs(24 * 60 * 60),
        max_unavailable_backoff: Duration::from_secs(1),
        outage_probe_interval: Duration::from_secs(30),
    }
}

type TestEngine = Engine<PgStore, ScriptedDriver, AgentServerLauncher, WallClock>;

/// Runs `engine.run_once()` in a loop until `stop` is set.
fn spin(engine: Arc<TestEngine>, stop: Arc<AtomicBool>) -> JoinHandle<()> {
    tokio::spawn(async move {
        while !stop.load(Ordering::SeqCst) {
            engine.run_once().await;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
}

/// One task under test.
struct Case {
    task: TaskId,
    scope: Scope,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_state_change_is_one_run_on_its_own_thread() {
    let started = Instant::now();
    let server = LangGraph::start();
    let db = TestDb::create().await;
    let store = PgStore::new(db.pool().clone(), policy());
    let driver = ScriptedDriver::default();
    let engines: Vec<Arc<TestEngine>> = (0..ENGINES)
        .map(|i| {
            // Two looks per call must fit the 15 s lease margin: 2 × 5 s.
            let launcher = server.launcher(|c| c.request_timeout_ms = 5_000);
            launcher
                .config()
                .fits(&policy())
                .unwrap_or_else(|e| panic!("{e}"));
            let worker = WorkerId::from(format!("worker-{i}"));
            Arc::new(Engine::new(
                store.clone(),
                driver.clone(),
                launcher,
                WallClock,
                worker,
                policy(),
            ))
        })
        .collect();
    server
        .launcher(|_| {})
        .check()
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    let cases = submit_all(&server, &engines[0]).await;
    let stop = Arc::new(AtomicBool::new(false));
    let loops: Vec<_> = engines
        .iter()
        .map(|e| spin(e.clone(), stop.clone()))
        .collect();

    wait_for_runs(&server, &cases, 1).await;
    for case in &cases[..BUSY_THREADS] {
        user_turn(&server, &case.scope.thread).await;
    }
    driver.stage.store(1, Ordering::SeqCst);
    wait_for_runs(&server, &cases, 2).await;
    for case in &cases {
        let outcome = engines[1]
            .cancel(&case.scope, &CancelTarget::Id(case.task.clone()))
            .await
            .unwrap_or_else(|e| panic!("cancel: {e}"));
        assert_eq!(outcome, CancelOutcome::Requested(case.task.clone()));
    }
    wait_for_runs(&server, &cases, 3).await;
    tokio::time::sleep(Duration::from_secs(2)).await; // anything extra would show now
    stop.store(true, Ordering::SeqCst);
    for l in loops {
        l.await.unwrap_or_else(|e| panic!("engine loop: {e}"));
    }

    for (i, case) in cases.iter().enumerate() {
        check_thread(&server, case, usize::from(i < BUSY_THREADS)).await;
    }
    let overview = engines[0]
        .store()
        .overview()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        overview.busy_total >= 1,
        "no launch met a busy thread: {overview:?}"
    );
    assert_eq!(overview.undelivered, 0, "{overview:?}");
    assert!(
        overview.dead_letters.iter().all(|(_, n)| *n == 0),
        "{overview:?}"
    );
    db.cleanup().await;
    eprintln!(
        "{TASKS} tasks x 3 state changes delivered as {} runs ({} launches met a busy thread) in {:.1} s",
        3 * TASKS,
        overview.busy_total,
        started.elapsed().as_secs_f64()
    );
}

async fn submit_all(server: &LangGraph, engine: &TestEngine) -> Vec<Case> {
    let ids = SeededIds::new(9);
    let mut cases = Vec::with_capacity(TASKS);
    for i in 0..TASKS {
        let owner = format!("owner-{}", i % 5);
        let thread = server
            .create_thread(serde_json::json!({ "owner": owner }))
            .await;
        let scope = Scope {
            owner: owner.into(),
            thread,
        };
        let cmd = SubmitCommand {
            scope: scope.clone(),
            server: "remote-1".into(),
            name: format!("job-{i:02}"),
            tool: "paint".into(),
            arguments: "{}".into(),
        };
        let task = engine
            .submit(&ids, cmd)
            .await
            .unwrap_or_else(|e| panic!("submit: {e}"));
        cases.push(Case { task, scope });
    }
    cases
}

/// The user talks to the agent on `thread`: a run of their own that takes a while.
async fn user_turn(server: &LangGraph, thread: &ThreadId) {
    let body = serde_json::json!({
        "assistant_id": "echo",
        "input": { "messages": [{ "type": "human", "content": "hello\nfixture: sleep 1" }] },
        "multitask_strategy": "reject",
    });
    let answer = server
        .post_json(&format!("/threads/{thread}/runs"), &body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("user run: {e}"));
    assert!(
        answer.status().is_success(),
        "user run: {}",
        answer.status()
    );
}

/// The thread's notification runs (those carrying a key), newest first.
async fn notification_runs(server: &LangGraph, thread: &ThreadId) -> Vec<Value> {
    let runs = server.runs(thread).await;
    runs.into_iter()
        .filter(|r| r["metadata"][KEY_FIELD].is_string())
        .collect()
}

/// Waits until every thread has `n` notification runs, all ended (as the server lists them).
async fn wait_for_runs(server: &LangGraph, cases: &[Case], n: usize) {
    let until = Instant::now() + STAGE_LIMIT;
    loop {
        let mut behind = 0;
        for case in cases {
            let runs = notification_runs(server, &case.scope.thread).await;
            assert!(runs.len() <= n, "more than {n} runs on a thread: {runs:?}");
            let ended = runs
                .iter()
                .filter(|r| !matches!(r["status"].as_str(), Some("pending" | "running")))
                .count();
            if ended < n {
                behind += 1;
            }
        }
        if behind == 0 {
            return;
        }
        assert!(
            Instant::now() < until,
            "{behind} threads still lack run {n} after {STAGE_LIMIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Exactly three successful notification runs on the task's thread (besides `user_runs` of the
/// user's own), oldest first: degraded, input required, completed — versions 1, 2, 3 of this
/// task, each input a framed event without secrets.
async fn check_thread(server: &LangGraph, case: &Case, user_runs: usize) {
    let all = server.runs(&case.scope.thread).await;
    assert_eq!(all.len(), 3 + user_runs, "thread of {}: {all:?}", case.task);
    assert!(all.iter().all(|r| r["status"] == "success"), "{all:?}");
    let mut runs = notification_runs(server, &case.scope.thread).await;
    runs.reverse();
    assert_eq!(runs.len(), 3, "thread of {}: {runs:?}", case.task);
    let expected: [(&str, u64); 3] = [
        ("\"tracking_degraded\":true", 1),
        ("which colour?", 2),
        ("painted blue", 3),
    ];
    for (run, (needle, version)) in runs.iter().zip(expected) {
        assert_eq!(run["status"], "success", "{run}");
        assert_eq!(run["metadata"]["tasklatch_task_id"], case.task.as_str());
        assert_eq!(run["metadata"]["tasklatch_event_version"], version, "{run}");
        let key = run["metadata"][KEY_FIELD].as_str().unwrap_or_default();
        assert!(key.starts_with(&format!("task:{}:{version}:", case.task)));
        let message = input_message(run);
        assert_eq!(message["additional_kwargs"][NOTIFICATION_FLAG], true);
        let content = message["content"].as_str().unwrap_or_default();
        assert!(content.starts_with(NOTIFICATION_INSTRUCTION), "{content}");
        assert!(content.contains(BEGIN_MARKER), "{content}");
        assert!(content.contains(&format!("\"task_id\":\"{}\"", case.task)));
        assert!(
            content.contains(needle),
            "v{version} lacks {needle:?}: {content}"
        );
        let whole = Value::to_string(run);
        assert!(
            !whole.contains(REMOTE_SECRET) && !whole.contains(DRIVER_SECRET),
            "a secret reached the agent server: {whole}"
        );
    }
}
