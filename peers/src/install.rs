//! Installing the pinned peers on first use, through the repo's own script.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

/// A real server the tests can start.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Peer {
    /// `fastmcp[tasks]==4.1.4` in a virtualenv: the MCP tasks extension (2026-07-28).
    FastMcp,
    /// `@modelcontextprotocol/server-everything@2026.8.31` under an npm prefix: legacy tasks.
    Everything,
    /// `langgraph-cli[inmem]==0.4.40` in a virtualenv: the LangGraph Agent Server.
    LangGraph,
    /// `playwright-core@1.64.1` under an npm prefix: the browser driver (it drives Debian's
    /// Chromium, see [`crate::browser`]).
    Playwright,
}

impl Peer {
    /// The name `scripts/install-peers` knows it by (and its folder under the peers dir).
    pub fn name(self) -> &'static str {
        match self {
            Peer::FastMcp => "fastmcp",
            Peer::Everything => "everything",
            Peer::LangGraph => "langgraph",
            Peer::Playwright => "playwright",
        }
    }
}

/// The repository's root folder: the nearest folder holding `scripts/install-peers`, looked for
/// upwards from the running test's package (`CARGO_MANIFEST_DIR` at run time, as `cargo test`
/// sets it), then from the current folder, then from where this crate was compiled. (A build
/// directory reused from another checkout must not send the tests to that checkout.)
pub fn repo_root() -> PathBuf {
    let starts = [
        std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from),
        std::env::current_dir().ok(),
        Some(PathBuf::from(env!("CARGO_MANIFEST_DIR"))),
    ];
    starts
        .into_iter()
        .flatten()
        .find_map(|start| {
            start
                .ancestors()
                .find(|dir| dir.join("scripts/install-peers").is_file())
                .map(PathBuf::from)
        })
        .unwrap_or_else(|| PathBuf::from("."))
}

fn peers_dir() -> PathBuf {
    match std::env::var_os("TASKLATCH_PEERS_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => repo_root().join("target/peers"),
    }
}

/// Installs `peer` if it is not installed yet (`scripts/install-peers NAME`: pinned, cached,
/// safe to run from several test processes at once) and returns its folder. `Err` says what is
/// missing (no python3, no npm, a failed download), with the script's own words.
pub fn installed(peer: Peer) -> Result<PathBuf, String> {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let script = repo_root().join("scripts/install-peers");
    let out = Command::new("bash")
        .arg(&script)
        .arg(peer.name())
        .output()
        .map_err(|e| format!("cannot run {}: {e} (is bash installed?)", script.display()))?;
    if !out.status.success() {
        return Err(format!(
            "the real peer `{}` could not be installed by {} ({}):\n{}",
            peer.name(),
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(peers_dir().join(peer.name()))
}
