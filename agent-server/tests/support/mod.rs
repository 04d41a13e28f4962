//! Shared by the real-server tests: a `langgraph dev` on a fresh state folder, a plain HTTP
//! client that looks at the server from the outside (threads, runs), and launcher builders.
#![allow(dead_code)]

pub mod fake;

use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};
use tasklatch_agent_server::{AgentServerConfig, AgentServerLauncher};
use tasklatch_core::ids::{RunId, ThreadId};
use tasklatch_core::ports::{Launcher, RunStatus};
use tasklatch_peers::{start_langgraph, PeerProcess};

/// A running `langgraph dev` serving `fixtures/servers/langgraph` from a fresh state folder,
/// which is removed (after the server stops) on drop.
pub struct LangGraph {
    process: Option<PeerProcess>,
    state_dir: PathBuf,
    pub base_url: String,
    pub http: reqwest::Client,
}

impl LangGraph {
    /// Starts it; panics with the peer harness's message (what is missing, the log's tail) if
    /// it cannot be installed or started — never a skip.
    pub fn start() -> LangGraph {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        // This crate's own checkout: the app under test is the one beside this crate.
        let app = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/servers/langgraph");
        let state_dir = std::env::temp_dir().join(format!(
            "tasklatch-langgraph-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&state_dir);
        let process = start_langgraph(&app, &state_dir)
            .unwrap_or_else(|e| panic!("langgraph dev could not be started: {e}"));
        let base_url = process.url("");
        LangGraph {
            process: Some(process),
            state_dir,
            base_url,
            http: reqwest::Client::new(),
        }
    }

    /// A launcher for the echo graph with the given tweaks.
    pub fn launcher(&self, tweak: impl FnOnce(&mut AgentServerConfig)) -> AgentServerLauncher {
        let mut config = AgentServerConfig::new(&self.base_url, "echo");
        tweak(&mut config);
        AgentServerLauncher::new(&config).unwrap_or_else(|e| panic!("{e}"))
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    /// `POST /threads` with `metadata`; the new thread's id.
    pub async fn create_thread(&self, metadata: Value) -> ThreadId {
        let v = self
            .send(self.post_json("/threads", &json!({ "metadata": metadata })))
            .await;
        match v["thread_id"].as_str() {
            Some(id) => ThreadId::from(id),
            None => panic!("POST /threads answered {v}"),
        }
    }

    /// `DELETE /threads/{id}`.
    pub async fn delete_thread(&self, thread: &ThreadId) {
        let r = self
            .http
            .delete(self.url(&format!("/threads/{thread}")))
            .send()
            .await
            .unwrap_or_else(|e| panic!("DELETE thread: {e}"));
        assert!(r.status().is_success(), "DELETE thread: {}", r.status());
    }

    /// The HTTP status of `GET path`.
    pub async fn status_of(&self, path: &str) -> u16 {
        self.http
            .get(self.url(path))
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {path}: {e}"))
            .status()
            .as_u16()
    }

    /// Every run of `thread` (newest first), whole, as the server lists them.
    pub async fn runs(&self, thread: &ThreadId) -> Vec<Value> {
        let v = self
            .send(
                self.http
                    .get(self.url(&format!("/threads/{thread}/runs?limit=1000"))),
            )
            .await;
        match v {
            Value::Array(runs) => runs,
            other => panic!("run list of {thread}: {other}"),
        }
    }

    /// The thread's current state (`GET /threads/{id}/state`).
    pub async fn thread_state(&self, thread: &ThreadId) -> Value {
        self.send(self.http.get(self.url(&format!("/threads/{thread}/state"))))
            .await
    }

    /// One run, whole.
    pub async fn run(&self, thread: &ThreadId, run: &RunId) -> Value {
        self.send(
            self.http
                .get(self.url(&format!("/threads/{thread}/runs/{run}"))),
        )
        .await
    }

    /// `POST path` with a JSON body, not sent yet.
    pub fn post_json(&self, path: &str, body: &Value) -> reqwest::RequestBuilder {
        self.http
            .post(self.url(path))
            .header("content-type", "application/json")
            .body(body.to_string())
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> Value {
        let r = req.send().await.unwrap_or_else(|e| panic!("request: {e}"));
        let status = r.status();
        let body = r.text().await.unwrap_or_default();
        assert!(status.is_success(), "HTTP {status}: {body}");
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"))
    }
}

impl Drop for LangGraph {
    fn drop(&mut self) {
        if let Some(mut p) = self.process.take() {
            p.stop();
        }
        let _ = std::fs::remove_dir_all(&self.state_dir);
    }
}

/// Asks `launcher` for the run's status until it is terminal or `limit` passes.
pub async fn wait_terminal(
    launcher: &impl Launcher,
    thread: &ThreadId,
    run: &RunId,
    limit: Duration,
) -> RunStatus {
    let until = Instant::now() + limit;
    loop {
        let status = launcher
            .run_status(thread, run)
            .await
            .unwrap_or_else(|e| panic!("run_status: {e}"));
        if !matches!(status, RunStatus::Pending | RunStatus::Running) {
            return status;
        }
        assert!(
            Instant::now() < until,
            "run {run} still {status:?} after {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The text of the first input message of a run as the server holds it.
pub fn input_message(run: &Value) -> &Value {
    &run["kwargs"]["input"]["messages"][0]
}
