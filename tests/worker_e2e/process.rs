//! One `tasklatch worker` process of the end-to-end test: its config file, its log (kept
//! across restarts, so every incarnation's lines can be searched), SIGKILL, SIGTERM with the
//! time it took to exit, and an HTTP client for its API. (Shared by several test targets, each
//! using part of it.)
#![allow(dead_code)]

use serde_json::Value;
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a worker may take to become ready.
const READY_WITHIN: Duration = Duration::from_secs(60);
/// How long a SIGTERM'd worker is given before the test calls it hung.
const EXIT_WITHIN: Duration = Duration::from_secs(60);

/// A worker process (not running until started).
pub struct Worker {
    pub name: &'static str,
    pub port: u16,
    config: PathBuf,
    log: PathBuf,
    env: Vec<(String, String)>,
    child: Option<Child>,
    http: reqwest::Client,
}

impl Worker {
    /// A worker named `name` with `config` written into `dir`, listening on `port`.
    pub fn new(
        name: &'static str,
        dir: &Path,
        config: &str,
        port: u16,
        env: &[(&str, String)],
    ) -> Worker {
        let path = dir.join(format!("{name}.toml"));
        std::fs::write(&path, config).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        Worker {
            name,
            port,
            config: path,
            log: dir.join(format!("{name}.log")),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            child: None,
            http: reqwest::Client::new(),
        }
    }

    /// Starts the binary and waits until `/readyz` answers 200.
    pub async fn start(&mut self) {
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap_or_else(|e| panic!("open {}: {e}", self.log.display()));
        let err = log.try_clone().unwrap_or_else(|e| panic!("{e}"));
        let child = Command::new(env!("CARGO_BIN_EXE_tasklatch"))
            .arg("worker")
            .arg("--config")
            .arg(&self.config)
            .args(["--log-format", "json"])
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", self.name));
        self.child = Some(child);
        let until = Instant::now() + READY_WITHIN;
        loop {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                panic!(
                    "{} exited at start ({status}):\n{}",
                    self.name,
                    self.log_tail()
                );
            }
            let ready = self.http.get(self.url("/readyz")).send().await;
            if ready.is_ok_and(|r| r.status().as_u16() == 200) {
                return;
            }
            assert!(
                Instant::now() < until,
                "{} not ready:\n{}",
                self.name,
                self.log_tail()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// SIGKILL: a crash.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            signal(child.id(), "-KILL");
            let _ = child.wait();
        }
    }

    /// Sends SIGTERM without waiting.
    pub fn send_term(&self) {
        let child = self
            .child
            .as_ref()
            .unwrap_or_else(|| panic!("{} is not running", self.name));
        signal(child.id(), "-TERM");
    }

    /// Whether the process is still running.
    pub fn running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// SIGTERM, then waits for the exit; returns how long it took and the exit status.
    pub async fn term(&mut self) -> (Duration, std::process::ExitStatus) {
        let sent = Instant::now();
        self.send_term();
        self.wait_exit(sent).await
    }

    /// Waits for the exit; returns the time since `since` and the exit status.
    pub async fn wait_exit(&mut self, since: Instant) -> (Duration, std::process::ExitStatus) {
        let mut child = self
            .child
            .take()
            .unwrap_or_else(|| panic!("{} is not running", self.name));
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return (since.elapsed(), status);
            }
            if since.elapsed() > EXIT_WITHIN {
                let _ = child.kill();
                panic!("{} did not exit:\n{}", self.name, self.log_tail());
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Everything every incarnation logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The last 40 lines of the log.
    pub fn log_tail(&self) -> String {
        let log = self.log();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    /// `http://127.0.0.1:PORT` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// The body of `GET path` as text.
    pub async fn http_text(&self, path: &str) -> String {
        let res = self.http.get(self.url(path)).send().await;
        let res = res.unwrap_or_else(|e| panic!("{} {path}: {e}", self.name));
        res.text().await.unwrap_or_default()
    }

    /// An API call: status and JSON body (`Null` when the body is not JSON).
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
        body: Option<&Value>,
    ) -> (u16, Value) {
        let mut req = self.http.request(method, self.url(path));
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        if let Some(b) = body {
            req = req
                .header("content-type", "application/json")
                .body(b.to_string());
        }
        let res = req
            .send()
            .await
            .unwrap_or_else(|e| panic!("{} {path}: {e}", self.name));
        let status = res.status().as_u16();
        let text = res.text().await.unwrap_or_default();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Sends `sig` (`-TERM`, `-KILL`) to `pid`.
fn signal(pid: u32, sig: &str) {
    let status = Command::new("kill")
        .arg(sig)
        .arg(pid.to_string())
        .status()
        .unwrap_or_else(|e| panic!("kill: {e}"));
    assert!(status.success(), "kill {sig} {pid} failed");
}
