//! API fuzzing: schemathesis (pinned, installed by `scripts/install-peers schemathesis` under
//! the peers folder) against `/openapi.json` of a running `tasklatch worker` — real Postgres,
//! fastmcp and `langgraph dev` behind it — with every check schemathesis has (`--checks all`:
//! no server error, statuses, content types, headers and bodies conform to the document,
//! negative data rejected, positive data accepted, unsupported methods, auth ignored…), and its
//! stateful phase following the document's links from a submit to the task's detail, cancel
//! and listing; and the panel's JSON (listing and detail, with its ETag/304), signed in with the
//! session cookie of the token exchange.
//!
//! The worker holds planted secrets (the database password, an MCP header, an Agent Server
//! header) and real tasks whose remote ids are secrets. Every response schemathesis recorded
//! (its VCR cassette, written without its own sanitising) is read back: none may be a 5xx and
//! none may carry a secret. A tool that cannot be installed fails the test with the reason.

#[path = "worker_e2e/process.rs"]
mod process;

use process::Worker;
use reqwest::Method;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;
use tasklatch_core::policy::Policy;
use tasklatch_core::store::Store;
use tasklatch_peers::{free_port, start_fastmcp, start_langgraph};
use tasklatch_pg::harness::TestDb;
use tasklatch_pg::PgStore;

const TOKEN: &str = "tok-fuzz-PLANTED-0042";
const MCP_SECRET: &str = "PLANTED-FUZZ-MCP-TOKEN";
const AGENT_SECRET: &str = "PLANTED-FUZZ-AGENT-KEY";
const DB_PASSWORD: &str = "PLANTED-FUZZ-DB-PASSWORD";
/// Test cases per operation and phase, and the seed: the same run every time.
const MAX_EXAMPLES: &str = "50";
const SEED: &str = "1";

/// Reads the cassette's responses as JSON lines `{code, body, headers}`.
const CASSETTE_READER: &str = r#"
import json, sys, yaml
for i in yaml.safe_load(open(sys.argv[1]))["http_interactions"]:
    r = i.get("response") or {}
    print(json.dumps({"uri": (i.get("request") or {}).get("uri", ""),
                      "code": int(r["status"]["code"]),
                      "body": (r.get("body") or {}).get("string", ""),
                      "headers": r.get("headers", {})}))
"#;

/// This checkout (the test's own package is the repository's root).
fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The schemathesis virtualenv, installed (cached) by the repository's script.
fn schemathesis() -> PathBuf {
    let root = repo_root();
    let out = Command::new("bash")
        .arg(root.join("scripts/install-peers"))
        .arg("schemathesis")
        .output()
        .unwrap_or_else(|e| panic!("cannot run scripts/install-peers: {e}"));
    assert!(
        out.status.success(),
        "schemathesis could not be installed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::env::var_os("TASKLATCH_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/peers"))
        .join("schemathesis")
}

fn config(port: u16, mcp_url: &str, agent_url: &str) -> String {
    format!(
        r#"
[database]
url = "env:FUZZ_DATABASE_URL"
[loops]
tick_ms = 200
[engine]
min_lease_left_ms = 5000
max_clock_skew_ms = 1000
poll_lease_ms = 8000
notify_lease_ms = 8000
cancel_lease_ms = 8000
[http]
listen = "127.0.0.1:{port}"
[auth]
tokens = [{{ owner = "fuzzer", sha256 = "{hash}" }}]
[servers.fix]
url = "{mcp_url}"
protocol = "extension"
request_timeout_ms = 2000
headers = {{ Authorization = "env:FUZZ_MCP_AUTH" }}
[agent_server]
base_url = "{agent_url}"
assistant_id = "echo"
request_timeout_ms = 2000
[agent_server.headers]
x-api-key = "env:FUZZ_AGENT_KEY"
[ui]
enabled = true
"#,
        hash = tasklatch_worker::token::hash_token(TOKEN)
    )
}

/// schemathesis's configuration: the panel's session id for the document's cookie scheme
/// (given to the scheme, not as a header, so that its missing-credentials checks can leave it
/// out), read from the environment.
const CONFIG: &str = "[auth.openapi.panel_session]\napi_key = \"${FUZZ_PANEL_SESSION}\"\n";

/// Runs schemathesis with the API token and, for the panel's JSON, the session `cookie`
/// (`name=value`).
fn run_schemathesis(venv: &Path, url: &str, reports: &Path, cookie: &str) -> std::process::Output {
    let dir = reports.parent().unwrap_or(reports);
    let config = dir.join("schemathesis.toml");
    std::fs::write(&config, CONFIG).unwrap_or_else(|e| panic!("{}: {e}", config.display()));
    let session = cookie.split_once('=').map_or("", |(_, id)| id);
    Command::new(venv.join("bin/st"))
        // Its example cache (`.schemathesis/`) goes beside the reports, not into the checkout.
        .current_dir(dir)
        .env("FUZZ_PANEL_SESSION", session)
        .arg("--config-file")
        .arg(&config)
        .args(["run", url, "--checks", "all", "--header"])
        .arg(format!("Authorization: Bearer {TOKEN}"))
        .args([
            "--max-examples",
            MAX_EXAMPLES,
            "--seed",
            SEED,
            "--workers",
            "1",
        ])
        .args(["--report", "vcr,json", "--report-dir"])
        .arg(reports)
        .args(["--output-sanitize", "false", "--no-color"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run schemathesis: {e}"))
}

fn report_file(dir: &Path, prefix: &str) -> PathBuf {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{e}"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        })
        .unwrap_or_else(|| panic!("no {prefix} report in {}", dir.display()))
}

/// Every recorded response: (status, request URI, body and headers as text).
fn responses(venv: &Path, cassette: &Path) -> Vec<(u16, String, String)> {
    let out = Command::new(venv.join("bin/python"))
        .args(["-c", CASSETTE_READER])
        .arg(cassette)
        .output()
        .unwrap_or_else(|e| panic!("cannot read the cassette: {e}"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            let code = v["code"].as_u64().unwrap_or(0) as u16;
            let uri = v["uri"].as_str().unwrap_or_default().to_owned();
            (code, uri, format!("{} {}", v["body"], v["headers"]))
        })
        .collect()
}

/// The panel's session cookie (`name=value`), from the token exchange at `session_url`.
async fn panel_cookie(session_url: &str) -> String {
    let res = reqwest::Client::new()
        .post(session_url)
        .header("authorization", format!("Bearer {TOKEN}"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("sign in: {e}"));
    assert_eq!(res.status().as_u16(), 204, "sign in");
    let set = res
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok());
    set.and_then(|v| v.split(';').next())
        .unwrap_or_else(|| panic!("no session cookie"))
        .to_owned()
}

/// A thread on the Agent Server at `threads_url` owned by the fuzzer (tasks are bound only to
/// threads their owner owns), for the seeded tasks.
async fn fuzzer_thread(threads_url: &str) -> String {
    let res = reqwest::Client::new()
        .post(threads_url)
        .header("content-type", "application/json")
        .body(json!({"metadata": {"owner": "fuzzer"}}).to_string())
        .send()
        .await
        .unwrap_or_else(|e| panic!("create a thread: {e}"));
    let v: Value = res.json().await.unwrap_or_else(|e| panic!("{e}"));
    v["thread_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no thread id: {v}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_finds_no_server_error_and_no_secret() {
    let started = Instant::now();
    let venv = schemathesis();
    let dir = std::env::temp_dir().join(format!("tasklatch-worker-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let db = TestDb::create().await;
    let root = repo_root();
    let mut mcp = start_fastmcp(&root.join("fixtures/servers/tasks_extension_app.py"), &[])
        .unwrap_or_else(|e| panic!("the MCP server could not be started: {e}"));
    let mut langgraph = start_langgraph(&root.join("fixtures/servers/langgraph"), &dir.join("lg"))
        .unwrap_or_else(|e| panic!("langgraph dev could not be started: {e}"));
    let url = db
        .url()
        .replacen("://postgres@", &format!("://postgres:{DB_PASSWORD}@"), 1);
    let env = [
        ("FUZZ_DATABASE_URL", url),
        ("FUZZ_MCP_AUTH", format!("Bearer {MCP_SECRET}")),
        ("FUZZ_AGENT_KEY", AGENT_SECRET.to_owned()),
    ];
    let port = free_port().unwrap_or_else(|e| panic!("{e}"));
    let text = config(port, &mcp.url("/mcp"), &langgraph.url(""));
    let mut worker = Worker::new("worker-fuzz", &dir, &text, port, &env);
    worker.start().await;
    let thread = fuzzer_thread(&langgraph.url("/threads")).await;
    for i in 0..3 {
        let body = json!({"server": "fix", "tool": "slow_job", "arguments": {"steps": 1, "delay": 0.1}, "name": format!("seed {i}")});
        let (status, answer) = worker
            .call(
                Method::POST,
                &format!("/v1/threads/{thread}/tasks"),
                Some(TOKEN),
                Some(&body),
            )
            .await;
        assert_eq!(status, 201, "{answer}");
    }

    let cookie = panel_cookie(&worker.url("/ui/session")).await;
    let reports = dir.join("reports");
    let (venv2, doc, reports2) = (venv.clone(), worker.url("/openapi.json"), reports.clone());
    let cookie2 = cookie.clone();
    let out =
        tokio::task::spawn_blocking(move || run_schemathesis(&venv2, &doc, &reports2, &cookie2))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    let console = String::from_utf8_lossy(&out.stdout);
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(report_file(&reports, "json")).unwrap_or_default(),
    )
    .unwrap_or_else(|e| panic!("the JSON report: {e}"));
    assert!(out.status.success(), "schemathesis failed:\n{console}");
    let cases = &summary["test_cases"];
    assert_eq!(cases["with_failures"], json!(0), "{summary}");
    assert_eq!(summary["errors"], json!([]), "{summary}");

    let store = PgStore::new(db.pool().clone(), Policy::default());
    let rows = store
        .admin_rows(None, 10_000)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut secrets: Vec<String> = rows
        .iter()
        .map(|r| r.identity.handle.remote_task_id.expose().to_owned())
        .collect();
    secrets.extend([TOKEN, MCP_SECRET, AGENT_SECRET, DB_PASSWORD].map(String::from));
    let session = cookie.split_once('=').map_or("", |(_, id)| id);
    secrets.push(session.to_owned());
    let recorded = responses(&venv, &report_file(&reports, "vcr"));
    let server_errors = recorded.iter().filter(|(code, _, _)| *code >= 500).count();
    let leaks = recorded
        .iter()
        .filter(|(_, _, text)| secrets.iter().any(|s| text.contains(s.as_str())))
        .count();
    let panel_ok = recorded
        .iter()
        .filter(|(code, uri, _)| *code == 200 && uri.contains("/ui/threads/"))
        .count();
    assert!(panel_ok > 0, "no panel JSON request was answered 200");
    assert_eq!(server_errors, 0, "responses with a 5xx status");
    assert_eq!(leaks, 0, "responses carrying a secret");
    assert!(
        recorded.len() > 100,
        "schemathesis recorded only {} responses",
        recorded.len()
    );
    let mut by_status = std::collections::BTreeMap::new();
    for (code, _, _) in &recorded {
        *by_status.entry(*code).or_insert(0) += 1;
    }

    let (took, status) = worker.term().await;
    assert!(status.success(), "{status} after {took:?}");
    assert!(
        !secrets.iter().any(|s| worker.log().contains(s.as_str())),
        "the worker logged a secret"
    );
    mcp.stop();
    langgraph.stop();
    db.cleanup().await;
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "schemathesis: {} test cases generated, {} failures; {} responses recorded {by_status:?}: \
         {server_errors} server errors, {leaks} carrying one of {} secrets ({} tasks' remote ids); \
         {:.1} s",
        cases["generated"],
        cases["with_failures"],
        recorded.len(),
        secrets.len(),
        rows.len(),
        started.elapsed().as_secs_f64()
    );
}
