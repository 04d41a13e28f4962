//! What guards a submit (issue 22 item 3 and its LOW bullets), through the real router and an
//! engine on the in-memory store: thread ownership — the real `AgentServerLauncher` against a
//! real `langgraph dev` (started by the test on a free port with a fresh state folder), with
//! the default configuration — and a client that disconnects while the remote call runs.

mod support;

use axum::http::{Method, StatusCode};
use axum::Router;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::{
    app_state, bearer, call, lazy_pool, mem_engine, working, EveryThread, Gate, PlantedDriver,
};
use tasklatch_agent_server::{AgentServerConfig, AgentServerLauncher};
use tasklatch_peers::{start_langgraph, PeerProcess};
use tasklatch_worker::api::router;
use tasklatch_worker::api::threads::ThreadOwners;
use tokio::sync::{Notify, Semaphore};

/// The router over `threads`, and the count of remote tasks started through it.
fn guarded_app(threads: Arc<dyn ThreadOwners>) -> (Router, Arc<AtomicU32>) {
    gated_app(threads, None)
}

fn gated_app(threads: Arc<dyn ThreadOwners>, gate: Option<Gate>) -> (Router, Arc<AtomicU32>) {
    let driver = PlantedDriver::new("remote", working);
    let driver = match gate {
        Some(gate) => driver.gated(gate),
        None => driver,
    };
    let started = driver.submits.clone();
    let engine = mem_engine(driver, "guards-0");
    let auth = bearer(&[("tok-alice", "alice"), ("tok-bob", "bob")]);
    let pool = lazy_pool("postgres://u@127.0.0.1:1/db", None);
    let state = app_state(Arc::new(engine), 7, auth, &["fix"], threads, pool);
    (router(state, 4 << 10, 64), started)
}

/// `POST /v1/threads/{thread}/tasks` as `token`: the status and the body as text.
async fn submit(app: &Router, token: &str, thread: &str) -> (StatusCode, String) {
    let body = json!({"server": "fix", "tool": "job", "arguments": {}, "name": "report"});
    let uri = format!("/v1/threads/{thread}/tasks");
    let (status, _, text) = call(
        app,
        Method::POST,
        &uri,
        Some(token),
        Some(&body.to_string()),
    )
    .await;
    (status, text)
}

/// A `langgraph dev` serving the fixture app from a fresh state folder, removed on drop.
struct LangGraph {
    process: PeerProcess,
    state_dir: PathBuf,
}

impl LangGraph {
    fn start() -> LangGraph {
        let app = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/servers/langgraph");
        let state_dir =
            std::env::temp_dir().join(format!("tasklatch-guards-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&state_dir);
        let process = start_langgraph(&app, &state_dir)
            .unwrap_or_else(|e| panic!("langgraph dev could not be started: {e}"));
        LangGraph { process, state_dir }
    }

    /// A thread whose metadata is `metadata`.
    async fn thread(&self, metadata: Value) -> String {
        let res = reqwest::Client::new()
            .post(self.process.url("/threads"))
            .header("content-type", "application/json")
            .body(json!({ "metadata": metadata }).to_string())
            .send()
            .await
            .unwrap_or_else(|e| panic!("POST /threads: {e}"));
        let v: Value = serde_json::from_str(&res.text().await.unwrap_or_default())
            .unwrap_or_else(|e| panic!("{e}"));
        match v["thread_id"].as_str() {
            Some(id) => id.to_owned(),
            None => panic!("POST /threads answered {v}"),
        }
    }

    fn launcher(&self, tweak: impl FnOnce(&mut AgentServerConfig)) -> Arc<AgentServerLauncher> {
        let mut config = AgentServerConfig::new(self.process.url(""), "echo");
        tweak(&mut config);
        Arc::new(AgentServerLauncher::new(&config).unwrap_or_else(|e| panic!("{e}")))
    }
}

impl Drop for LangGraph {
    fn drop(&mut self) {
        self.process.stop();
        let _ = std::fs::remove_dir_all(&self.state_dir);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submits_go_only_into_the_callers_own_threads() {
    let server = LangGraph::start();
    let bobs = server.thread(json!({ "owner": "bob" })).await;
    let alices = server.thread(json!({ "owner": "alice" })).await;
    let unowned = server.thread(json!({})).await;
    let (app, started) = guarded_app(server.launcher(|_| {}));

    // Foreign, unowned, missing and non-UUID threads: one and the same answer, nothing started.
    let missing = "00000000-0000-4000-8000-000000000000";
    let mut refusals = Vec::new();
    for thread in [bobs.as_str(), unowned.as_str(), missing, "thread-1"] {
        refusals.push(submit(&app, "tok-alice", thread).await);
    }
    let expected = (StatusCode::NOT_FOUND, r#"{"error":"not found"}"#.to_owned());
    assert!(refusals.iter().all(|r| *r == expected), "{refusals:?}");
    assert_eq!(started.load(Ordering::SeqCst), 0, "nothing was started");

    assert_eq!(
        submit(&app, "tok-alice", &alices).await.0,
        StatusCode::CREATED
    );
    assert_eq!(submit(&app, "tok-bob", &bobs).await.0, StatusCode::CREATED);
    assert_eq!(started.load(Ordering::SeqCst), 2);

    // The explicit single-user opt-out: any thread the server can hold, but still no other id.
    let (open, started) = guarded_app(server.launcher(|c| c.check_thread_owner = false));
    assert_eq!(
        submit(&open, "tok-alice", &unowned).await.0,
        StatusCode::CREATED
    );
    assert_eq!(submit(&open, "tok-alice", "thread-1").await, expected);
    assert_eq!(started.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_agent_server_that_cannot_be_asked_starts_nothing() {
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
        l.local_addr().unwrap_or_else(|e| panic!("{e}")).port()
    };
    let config = AgentServerConfig::new(format!("http://127.0.0.1:{closed}"), "echo");
    let launcher = AgentServerLauncher::new(&config).unwrap_or_else(|e| panic!("{e}"));
    let (app, started) = guarded_app(Arc::new(launcher));
    let (status, body) = submit(&app, "tok-alice", "0badc0de-0000-4000-8000-00000000000a").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(body.contains("nothing was started"), "{body}");
    assert!(!body.contains(&closed.to_string()), "{body}");
    assert_eq!(started.load(Ordering::SeqCst), 0);
}

/// The tasks `token` lists in `thread`.
async fn listed(app: &Router, token: &str, thread: &str) -> Vec<Value> {
    let uri = format!("/v1/threads/{thread}/tasks");
    let (_, _, text) = call(app, Method::GET, &uri, Some(token), None).await;
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    v["tasks"].as_array().cloned().unwrap_or_default()
}

/// Issue 22 LOW: the request's future is dropped while the driver's submit runs (the client
/// went away); the submit still runs to its end and the task is tracked.
#[tokio::test]
async fn a_client_that_disconnects_mid_submit_does_not_drop_the_work() {
    let gate = Gate {
        entered: Arc::new(Notify::new()),
        permits: Arc::new(Semaphore::new(0)),
    };
    let (app, started) = gated_app(Arc::new(EveryThread), Some(gate.clone()));
    let thread = "0badc0de-0000-4000-8000-00000000000b";
    let request = tokio::spawn({
        let app = app.clone();
        async move { submit(&app, "tok-alice", thread).await }
    });
    tokio::time::timeout(Duration::from_secs(5), gate.entered.notified())
        .await
        .unwrap_or_else(|_| panic!("the driver was never called"));
    request.abort();
    assert!(request.await.is_err(), "the request was cancelled");
    gate.permits.add_permits(1);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let tasks = listed(&app, "tok-alice", thread).await;
        if started.load(Ordering::SeqCst) == 1
            && tasks.len() == 1
            && tasks[0]["status"] == "working"
        {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the submit did not finish: {} started, tasks {tasks:?}",
            started.load(Ordering::SeqCst)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
