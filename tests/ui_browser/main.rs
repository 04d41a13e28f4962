//! The background-task panel in a real browser: Debian's Chromium driven headless by the
//! pinned `playwright-core` (`tasklatch_peers::browser`, both installed on first use), against
//! a real `tasklatch worker` process with `[ui]` on, Postgres, the MCP server (fastmcp) and
//! `langgraph dev`. The browser's side is `panel.cjs`, beside this file:
//!
//! - signed in through the 401 token form, a task submitted through the API appears in the
//!   open panel within a second, by push (the page is not reloaded);
//! - a question is answered in the panel's form, and the task completes with that answer;
//! - a task is cancelled from the panel (the confirmation's second step);
//! - a task name full of markup renders as text: no element made, no script run;
//! - with the push stream refused, the page polls the listing every 3 s while a task is
//!   active (a 304 while nothing changed), shows a new task within 5 s, polls nothing while
//!   its tab is hidden and polls at once when it is shown again;
//! - a chat app's page on the origin `ui.frame_ancestors` lists shows the signed-in panel in
//!   an iframe; one on another origin gets nothing in the frame (the CSP refuses it);
//! - another owner, signed in, gets a 404 for the first owner's panel and listing;
//! - no page logs an uncaught error or a Content-Security-Policy violation.
//!
//! Then, from the Agent Server: every one of those tasks told its thread each state once, in
//! order (the answered task `input_required` then `completed`, the cancelled one `cancelled`,
//! the named and the polled ones `completed`, the active one of the polling step
//! `cancelled`). The screenshots go to `target/ui-shots/`, or to
//! `$TASKLATCH_UI_SHOTS` (`reports/ui/` when the README's are refreshed).
//!
//! A browser or peer that cannot be installed or started fails the test with the reason —
//! never a skip.

#[path = "../worker_e2e/peers.rs"]
mod peers;
#[path = "../worker_e2e/process.rs"]
mod process;

use peers::{repo_path, Peers};
use process::Worker;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tasklatch_peers::browser::{chromium, Browser};
use tasklatch_peers::free_port;
use tasklatch_pg::harness::TestDb;

const ALICE: (&str, &str) = ("alice", "tok-alice-PANEL-BROWSER-1");
const BOB: (&str, &str) = ("bob", "tok-bob-PANEL-BROWSER-2");
/// The name the hostile-name step submits: tags, an event handler, quotes and an entity.
const HOSTILE_NAME: &str = r#"<img src=x onerror="window.tasklatchPwned=1"><script>window.tasklatchPwned=2</script> &amp; "q""#;
/// How long the browser's scenarios may take in all.
const SCENARIOS_WITHIN: Duration = Duration::from_secs(240);
/// How long the notification runs may take to arrive after the scenarios.
const RUNS_WITHIN: Duration = Duration::from_secs(90);

/// `port`'s worker, its peers, and the chat app's origin that may frame the panel.
fn config(port: u16, mcp_url: &str, agent_url: &str, chat_port: u16) -> String {
    let hash = tasklatch_worker::token::hash_token;
    format!(
        r#"
[database]
url = "env:E2E_DATABASE_URL"
[loops]
tick_ms = 200
[engine]
poll_interval_ms = 500
max_poll_backoff_ms = 1000
run_check_interval_ms = 300
[http]
listen = "127.0.0.1:{port}"
[auth]
tokens = [{{ owner = "{a}", sha256 = "{ah}" }}, {{ owner = "{b}", sha256 = "{bh}" }}]
[servers.fix]
url = "{mcp_url}"
protocol = "extension"
[agent_server]
base_url = "{agent_url}"
assistant_id = "echo"
owner_metadata_key = "owner"
[ui]
enabled = true
frame_ancestors = ["http://127.0.0.1:{chat_port}"]
"#,
        a = ALICE.0,
        ah = hash(ALICE.1),
        b = BOB.0,
        bh = hash(BOB.1),
    )
}

/// Where the screenshots go.
fn shots_dir() -> PathBuf {
    let dir = match std::env::var_os("TASKLATCH_UI_SHOTS") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => repo_path("target/ui-shots"),
    };
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// Runs `panel.cjs` to its end: the JSON lines it printed. `chat_ports`: the chat app
/// allowed to frame the panel, and one that is not.
fn run_scenarios(
    browser: &Browser,
    worker: &Worker,
    threads: (&str, &str),
    chat_ports: (u16, u16),
) -> Vec<Value> {
    let mut child = Command::new("node")
        .arg(repo_path("tests/ui_browser/panel.cjs"))
        .env("PW", &browser.playwright)
        .env("CHROMIUM", &browser.chromium)
        .env("BASE", worker.url(""))
        .env("ALICE_TOKEN", ALICE.1)
        .env("ALICE_THREAD", threads.0)
        .env("BOB_TOKEN", BOB.1)
        .env("BOB_THREAD", threads.1)
        .env("HOSTILE_NAME", HOSTILE_NAME)
        .env("SHOTS", shots_dir())
        .env("CHAT_PORT", chat_ports.0.to_string())
        .env("OTHER_CHAT_PORT", chat_ports.1.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run node: {e}"));
    let until = Instant::now() + SCENARIOS_WITHIN;
    while matches!(child.try_wait(), Ok(None)) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(100));
    }
    if matches!(child.try_wait(), Ok(None)) {
        let _ = child.kill();
    }
    let out = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "the browser's scenarios failed ({}; {} at most):\n{said}\n{}\nworker log:\n{}",
        out.status,
        SCENARIOS_WITHIN.as_secs(),
        String::from_utf8_lossy(&out.stderr),
        worker.log_tail()
    );
    println!("{said}");
    said.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The states each task told the thread, in order, once every task told `want` of its own.
async fn told(peers: &Peers, thread: &str, want: &BTreeMap<String, Vec<&str>>) -> Vec<Value> {
    let until = Instant::now() + RUNS_WITHIN;
    loop {
        let runs = peers.notification_runs(thread).await;
        let ended = runs
            .iter()
            .filter(|r| !matches!(r["status"].as_str(), Some("pending" | "running")))
            .count();
        let wanted: usize = want.values().map(Vec::len).sum();
        if ended >= wanted {
            return runs;
        }
        assert!(Instant::now() < until, "runs still missing: {runs:#?}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Each task's runs: its states once each, in order, versions 1, 2…, all successful.
fn check_runs(runs: &[Value], want: &BTreeMap<String, Vec<&str>>) {
    for (task, states) in want {
        let mine: Vec<&Value> = runs
            .iter()
            .filter(|r| r["metadata"]["tasklatch_task_id"] == json!(task))
            .collect();
        assert_eq!(mine.len(), states.len(), "{task}: {mine:#?}");
        for (k, (run, state)) in mine.iter().zip(states).enumerate() {
            assert_eq!(run["status"], json!("success"), "{task}: {run}");
            assert_eq!(run["metadata"]["tasklatch_event_version"], json!(k + 1));
            let input = run["kwargs"]["input"]["messages"][0]["content"].as_str();
            let said = format!("\"status\":\"{state}\"");
            assert!(
                input.is_some_and(|i| i.contains(&said)),
                "{task}: run {k} is not `{state}`: {run}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_panel_in_a_real_browser() {
    // The browser first: a missing one fails at once, with the reason.
    let browser = chromium().unwrap_or_else(|e| panic!("no browser for the panel's tests: {e}"));
    println!("browser: {}", browser.versions);
    let dir = std::env::temp_dir().join(format!("tasklatch-ui-browser-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let db = TestDb::create().await;
    let peers = Peers::start(&dir);
    let threads = (
        peers.new_thread(ALICE.0).await,
        peers.new_thread(BOB.0).await,
    );
    let port = free_port().unwrap_or_else(|e| panic!("{e}"));
    let chat_ports = (free_port(), free_port());
    let chat_ports = match chat_ports {
        (Ok(a), Ok(b)) if a != b => (a, b),
        other => panic!("no two free ports for the chat apps: {other:?}"),
    };
    let text = config(
        port,
        &peers.mcp.url("/mcp"),
        &peers.langgraph.url(""),
        chat_ports.0,
    );
    let env = [("E2E_DATABASE_URL", db.url().to_owned())];
    let mut worker = Worker::new("panel", &dir, &text, port, &env);
    worker.start().await;

    let lines = run_scenarios(&browser, &worker, (&threads.0, &threads.1), chat_ports);
    let done = lines
        .iter()
        .find(|l| l["step"] == json!("done"))
        .unwrap_or_else(|| panic!("no `done` step: {lines:#?}"));
    let id = |k: &str| {
        done[k]
            .as_str()
            .unwrap_or_else(|| panic!("{done}"))
            .to_owned()
    };
    let want = BTreeMap::from([
        (id("pushed"), vec!["cancelled"]),
        (id("answered"), vec!["input_required", "completed"]),
        (id("hostile"), vec!["completed"]),
        (id("watcher"), vec!["cancelled"]),
        (id("polled"), vec!["completed"]),
    ]);
    let runs = told(&peers, &threads.0, &want).await;
    check_runs(&runs, &want);
    assert!(peers.notification_runs(&threads.1).await.is_empty());
    worker.term().await;
    drop(peers);
    let _ = std::fs::remove_dir_all(&dir);
}
