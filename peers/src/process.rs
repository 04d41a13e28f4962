//! One peer server process: started on a port chosen here, checked for readiness on that
//! port, stopped by its PID.

use crate::http::http_get_status;
use crate::{QUIET_ENV, START_TIMEOUT};
use std::fs::File;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// When a started peer counts as ready.
#[derive(Copy, Clone, Debug)]
pub enum Readiness {
    /// `GET path` answers with any HTTP status (an MCP endpoint answers a GET with 4xx).
    HttpAnswers(&'static str),
    /// `GET path` answers 200.
    HttpOk(&'static str),
}

/// A free TCP port on 127.0.0.1 (bound, then released: a small race the readiness check on
/// exactly this port catches).
pub fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

/// Builds the command that starts a peer (called again on every restart).
pub type Recipe = std::sync::Arc<dyn Fn() -> Command + Send + Sync>;

/// A running peer, in a process group of its own. Stopped (SIGTERM to the group, then SIGKILL
/// after 5 s) when dropped.
pub struct PeerProcess {
    name: &'static str,
    recipe: Recipe,
    child: Option<Child>,
    port: u16,
    log: PathBuf,
    command: String,
    readiness: Readiness,
}

impl PeerProcess {
    /// Spawns the command `recipe` builds (in its own process group, its output going to a
    /// log file, the quiet environment set) and waits up to [`START_TIMEOUT`] until it is ready
    /// on `port`. `Err` quotes the command and the log's tail.
    pub fn start(
        name: &'static str,
        recipe: Recipe,
        port: u16,
        readiness: Readiness,
    ) -> Result<Self, String> {
        let mut cmd = recipe();
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let log = std::env::temp_dir().join(format!(
            "tasklatch-peer-{}-{}-{}.log",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed),
            port
        ));
        let command = format!("{cmd:?}");
        let out =
            File::create(&log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        for (k, v) in QUIET_ENV {
            cmd.env(k, v);
        }
        cmd.stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0);
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {name} ({command}): {e}"))?;
        let mut p = PeerProcess {
            name,
            recipe,
            child: Some(child),
            port,
            log,
            command,
            readiness,
        };
        p.wait_ready()?;
        Ok(p)
    }

    /// Stops the process and starts the same command again on the same port, waiting for
    /// readiness (a server restart: in-memory state is lost unless the peer persists it).
    pub fn restart(&mut self) -> Result<(), String> {
        self.stop();
        let fresh = PeerProcess::start(self.name, self.recipe.clone(), self.port, self.readiness)?;
        *self = fresh;
        Ok(())
    }

    /// Kills the whole process group at once (SIGKILL): a crash, not a shutdown.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            signal_group(child.id(), "-KILL");
            let _ = child.wait();
        }
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(self.failure(&format!("exited before it was ready ({status})")));
                }
            }
            let ready = match self.readiness {
                Readiness::HttpAnswers(path) => {
                    http_get_status(self.port, path, Duration::from_secs(2)).is_ok()
                }
                Readiness::HttpOk(path) => {
                    http_get_status(self.port, path, Duration::from_secs(2)) == Ok(200)
                }
            };
            if ready {
                return Ok(());
            }
            if Instant::now() > deadline {
                self.stop();
                return Err(self.failure(&format!(
                    "not ready on port {} after {} s",
                    self.port,
                    START_TIMEOUT.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn failure(&self, what: &str) -> String {
        format!(
            "{} {what}\ncommand: {}\nlast lines of {}:\n{}",
            self.name,
            self.command,
            self.log.display(),
            self.log_tail(30)
        )
    }

    /// The last `lines` lines the process wrote.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Everything the process wrote so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Stops the process group by its PID: SIGTERM, then SIGKILL if the process has not exited
    /// after 5 s.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        signal_group(child.id(), "-TERM");
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        signal_group(child.id(), "-KILL");
        let _ = child.wait();
    }
}

/// Sends `signal` (`-TERM`, `-KILL`) to the process group led by `pid`.
fn signal_group(pid: u32, signal: &str) {
    let _ = Command::new("kill")
        .arg(signal)
        .arg("--")
        .arg(format!("-{pid}"))
        .stderr(Stdio::null())
        .status();
}

impl Drop for PeerProcess {
    /// Stops the process; removes its log unless the thread is panicking (a failing test keeps
    /// the log, whose path its message names).
    fn drop(&mut self) {
        self.stop();
        if !std::thread::panicking() {
            let _ = std::fs::remove_file(&self.log);
        }
    }
}
