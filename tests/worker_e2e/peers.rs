//! The real peers of the end-to-end tests: the MCP server (fastmcp with the tasks extension,
//! `fixtures/servers/tasks_extension_app.py`) and `langgraph dev` (`fixtures/servers/langgraph/`),
//! with the Agent Server calls the tests read back through (threads owned by an owner, and the
//! notification runs of a thread). Shared by several test targets, each using part of it.
#![allow(dead_code)]

use reqwest::Method;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use tasklatch_peers::{start_fastmcp, start_langgraph, PeerProcess};

/// `rel` under the repository's root.
pub fn repo_path(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

pub struct Peers {
    pub mcp: PeerProcess,
    pub langgraph: PeerProcess,
    state_dir: PathBuf,
    http: reqwest::Client,
}

impl Peers {
    pub fn start(dir: &Path) -> Peers {
        let mcp = start_fastmcp(&repo_path("fixtures/servers/tasks_extension_app.py"), &[])
            .unwrap_or_else(|e| panic!("the MCP server could not be started: {e}"));
        let state_dir = dir.join("langgraph");
        let langgraph = start_langgraph(&repo_path("fixtures/servers/langgraph"), &state_dir)
            .unwrap_or_else(|e| panic!("langgraph dev could not be started: {e}"));
        Peers {
            mcp,
            langgraph,
            state_dir,
            http: reqwest::Client::new(),
        }
    }

    pub async fn agent(&self, method: Method, path: &str, body: Option<Value>) -> Value {
        let mut req = self.http.request(method, self.langgraph.url(path));
        if let Some(b) = body {
            req = req
                .header("content-type", "application/json")
                .body(b.to_string());
        }
        let res = req
            .send()
            .await
            .unwrap_or_else(|e| panic!("agent server {path}: {e}"));
        let status = res.status();
        let text = res.text().await.unwrap_or_default();
        assert!(status.is_success(), "agent server {path}: {status} {text}");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    pub async fn new_thread(&self, owner: &str) -> String {
        let v = self
            .agent(
                Method::POST,
                "/threads",
                Some(json!({"metadata": {"owner": owner}})),
            )
            .await;
        v["thread_id"]
            .as_str()
            .unwrap_or_else(|| panic!("{v}"))
            .to_owned()
    }

    /// The thread's notification runs (carrying a key), oldest first.
    pub async fn notification_runs(&self, thread: &str) -> Vec<Value> {
        let v = self
            .agent(
                Method::GET,
                &format!("/threads/{thread}/runs?limit=100"),
                None,
            )
            .await;
        let mut runs: Vec<Value> = v
            .as_array()
            .unwrap_or_else(|| panic!("{v}"))
            .iter()
            .filter(|r| r["metadata"]["tasklatch_key"].is_string())
            .cloned()
            .collect();
        runs.reverse();
        runs
    }
}

impl Drop for Peers {
    fn drop(&mut self) {
        self.mcp.stop();
        self.langgraph.stop();
        let _ = std::fs::remove_dir_all(&self.state_dir);
    }
}
