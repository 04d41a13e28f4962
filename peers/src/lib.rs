//! tasklatch-peers: the real servers the tests talk to, started by the tests themselves.
//!
//! Three pinned peers (see `scripts/install-peers` and `../shared/PEERS.md`):
//! [`Peer::FastMcp`] (the MCP tasks extension, protocol 2026-07-28), [`Peer::Everything`] (MCP
//! legacy tasks, 2025-11-25) and [`Peer::LangGraph`] (the LangGraph Agent Server, `langgraph
//! dev`); and one pinned tool, [`Peer::Playwright`], which [`browser`] pairs with Debian's
//! Chromium for the panel's browser tests. [`installed`] runs the install script on first use (cached under `target/peers/`, or
//! `$TASKLATCH_PEERS_DIR`); a peer that cannot be installed is an `Err` naming what is missing,
//! which tests turn into a failure — never a skip.
//!
//! [`PeerProcess`] starts one server on a free port chosen here, waits until an HTTP request to
//! the port it asked for is answered (a server that silently moved to another port never
//! becomes ready), keeps its output in a log file whose tail every error quotes, and stops it
//! by its PID (SIGTERM, then SIGKILL) on [`PeerProcess::stop`] or on drop.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod browser;
mod http;
mod install;
mod process;

pub use http::http_get_status;
pub use install::{installed, repo_root, Peer};
pub use process::{free_port, PeerProcess, Readiness, Recipe};

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

/// Environment that keeps the peers off the network and quiet (PEERS.md).
pub const QUIET_ENV: [(&str, &str); 6] = [
    ("LANGGRAPH_NO_VERSION_CHECK", "true"),
    ("LANGGRAPH_CLI_NO_ANALYTICS", "1"),
    ("LANGSMITH_TRACING", "false"),
    ("FASTMCP_CHECK_FOR_UPDATES", "off"),
    ("FASTMCP_SHOW_SERVER_BANNER", "false"),
    ("PYTHONUNBUFFERED", "1"),
];

/// How long a peer may take to answer its first request.
pub const START_TIMEOUT: Duration = Duration::from_secs(90);

/// Starts a fastmcp app (a Python script under `fixtures/servers/`) with the installed
/// virtualenv's interpreter: `python APP --port P`. Ready once `POST`-able path `/mcp` answers
/// any HTTP status.
pub fn start_fastmcp(app: &Path, args: &[&str]) -> Result<PeerProcess, String> {
    let python = installed(Peer::FastMcp)?.join("bin/python");
    let port = free_port()?;
    let app = app.to_path_buf();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let recipe: Recipe = Arc::new(move || {
        let mut cmd = Command::new(&python);
        cmd.arg(&app)
            .arg("--port")
            .arg(port.to_string())
            .args(&args);
        cmd
    });
    PeerProcess::start("fastmcp", recipe, port, Readiness::HttpAnswers("/mcp"))
}

/// Starts `mcp-server-everything streamableHttp` on a free port (one process; `npx` would leave
/// three). Ready once `/mcp` answers any HTTP status.
pub fn start_everything() -> Result<PeerProcess, String> {
    let bin = installed(Peer::Everything)?.join("node_modules/.bin/mcp-server-everything");
    let port = free_port()?;
    let recipe: Recipe = Arc::new(move || {
        let mut cmd = Command::new(&bin);
        cmd.arg("streamableHttp").env("PORT", port.to_string());
        cmd
    });
    PeerProcess::start(
        "server-everything",
        recipe,
        port,
        Readiness::HttpAnswers("/mcp"),
    )
}

/// Starts `langgraph dev --no-browser --no-reload` for the app folder `app` (holding
/// `langgraph.json`) on a free port. `langgraph dev` keeps its state in `.langgraph_api/`
/// inside the folder it runs in, so the app is copied into a fresh folder `state_dir` first
/// (pass the same `state_dir` again to restart on the same state). Ready once `GET /ok` answers
/// 200 on the port asked for.
pub fn start_langgraph(app: &Path, state_dir: &Path) -> Result<PeerProcess, String> {
    let dir = installed(Peer::LangGraph)?;
    copy_dir(app, state_dir).map_err(|e| {
        format!(
            "cannot copy the app {} to {}: {e}",
            app.display(),
            state_dir.display()
        )
    })?;
    let port = free_port()?;
    let bin: PathBuf = dir.join("bin");
    let state_dir = state_dir.to_path_buf();
    let recipe: Recipe = Arc::new(move || {
        let mut cmd = Command::new(bin.join("langgraph"));
        cmd.args(["dev", "--no-browser", "--no-reload", "--host", "127.0.0.1"])
            .arg("--port")
            .arg(port.to_string())
            .current_dir(&state_dir)
            .env("PATH", path_with(&bin));
        cmd
    });
    PeerProcess::start("langgraph dev", recipe, port, Readiness::HttpOk("/ok"))
}

/// `PATH` with `bin` first (so a peer's own console scripts find their interpreter).
fn path_with(bin: &Path) -> String {
    match std::env::var("PATH") {
        Ok(p) if !p.is_empty() => format!("{}:{p}", bin.display()),
        _ => bin.display().to_string(),
    }
}

/// Copies the files of `from` (not recursing into `.langgraph_api` or `__pycache__`) into `to`,
/// creating it; existing files are overwritten, other files in `to` are kept.
fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if name == ".langgraph_api" || name == "__pycache__" {
            continue;
        }
        let target = to.join(&name);
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}
