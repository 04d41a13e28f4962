//! The agent tools at `/mcp`, through rmcp's own client over streamable HTTP against the real
//! API router on a loopback port (the engine on the in-memory store, a remote-server double
//! whose handles hold planted secrets, threads owned `<owner>-…`): the listing and its hints;
//! all five tools in the run's thread; a call without the runtime's thread header refused;
//! another owner's token seeing and cancelling nothing of the victim's even with the victim's
//! thread, id and name; the submit's thread guard; read-only mode; authentication, `Host` and
//! body limits; the metric. And the same tools called by fastmcp's Python client (on the
//! official MCP Python SDK, from the pinned peers: `fixtures/clients/agent_tools_client.py`).

mod support;

use axum::http::{header, HeaderName, HeaderValue, Method, Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, ClientConfig};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::{
    app_state, bearer, lazy_pool, mem_engine, report, send, serve, PlantedDriver, PrefixOwners,
};
use tasklatch_core::ports::DriverError;
use tasklatch_core::snapshot::RemoteReport;
use tasklatch_worker::api::router;
use tasklatch_worker::config::AgentTools;

const SECRET: &str = "RT-PLANTED-TOOLS-SECRET";
const THREAD_HEADER: &str = "x-run-thread";
const BODY_LIMIT: usize = 8 << 10;

/// Tool `ask` asks `[q1]`; anything else is `working`.
fn first_report(tool: &str, id: &str) -> Result<RemoteReport, DriverError> {
    let mut first = report(id, "working");
    if tool == "ask" {
        first.status = "input_required".into();
        first.input_request = Some("[q1] Which colour?".into());
    }
    Ok(first)
}

/// The router with the agent tools (`read_only` or not), and the driver's submit count.
fn app(read_only: bool) -> (Router, Arc<AtomicU32>) {
    let driver = PlantedDriver::new(SECRET, first_report);
    let submits = driver.submits.clone();
    let engine = Arc::new(mem_engine(driver, "tools-test-0"));
    let auth = bearer(&[("tok-alice", "alice"), ("tok-bob", "bob")]);
    let pool = lazy_pool(
        "postgres://u:p@127.0.0.1:1/db",
        Some(Duration::from_millis(300)),
    );
    let mut state = app_state(engine, 1, auth, &["fix"], Arc::new(PrefixOwners), pool);
    state.agent_tools = Some(Arc::new(AgentTools {
        thread_header: HeaderName::from_static(THREAD_HEADER),
        read_only,
        allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
    }));
    (router(state, BODY_LIMIT, 64), submits)
}

type Client = RunningService<RoleClient, ClientConfig>;

/// An rmcp client of `addr`'s `/mcp` with `token` and, when given, the run's `thread` header.
async fn client(addr: SocketAddr, token: &str, thread: Option<&str>) -> Client {
    let mut headers = HashMap::new();
    if let Some(t) = thread {
        let value = HeaderValue::from_str(t).unwrap_or_else(|e| panic!("{e}"));
        headers.insert(HeaderName::from_static(THREAD_HEADER), value);
    }
    let config = StreamableHttpClientTransportConfig::with_uri(format!("http://{addr}/mcp"))
        .auth_header(token)
        .custom_headers(headers);
    let transport = StreamableHttpClientTransport::from_config(config);
    ClientConfig::default()
        .serve(transport)
        .await
        .unwrap_or_else(|e| panic!("connect: {e}"))
}

/// `tool` called with `args`: the result (the protocol's errors panic).
async fn call(c: &Client, tool: &'static str, args: Value) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    let params = CallToolRequestParams::new(tool).with_arguments(args);
    c.call_tool(params)
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
}

/// The result's text, as JSON; asserts it is (not) an error and holds no planted secret.
fn body(r: &CallToolResult, error: bool) -> Value {
    let text: String = r
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    assert_eq!(r.is_error.unwrap_or(false), error, "{text}");
    assert!(!text.contains(SECRET), "a secret leaked: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

async fn start(c: &Client, tool: &str, name: &str) -> String {
    let args = json!({"server": "fix", "tool": tool, "arguments": {"n": 1}, "name": name});
    let answer = body(&call(c, "start_background_task", args).await, false);
    answer["task_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .to_owned()
}

fn names(tools: &[rmcp::model::Tool]) -> Vec<String> {
    tools.iter().map(|t| t.name.to_string()).collect()
}

#[tokio::test]
async fn every_tool_is_listed_with_its_hints() {
    let (app, _) = app(false);
    let addr = serve(app).await;
    let alice = client(addr, "tok-alice", Some("alice-1")).await;
    let tools = alice
        .list_all_tools()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut listed = names(&tools);
    listed.sort();
    assert_eq!(
        listed,
        [
            "answer_background_task",
            "cancel_background_task",
            "get_background_task",
            "list_background_tasks",
            "start_background_task"
        ]
    );
    let cancel = tools.iter().find(|t| t.name == "cancel_background_task");
    let hints = cancel
        .and_then(|t| t.annotations.clone())
        .unwrap_or_default();
    assert_eq!(
        (hints.read_only_hint, hints.destructive_hint),
        (Some(false), Some(true))
    );
}

#[tokio::test]
async fn all_five_tools_act_in_the_runs_thread() {
    let (app, _) = app(false);
    let addr = serve(app).await;
    let alice = client(addr, "tok-alice", Some("alice-1")).await;
    let report = start(&alice, "job", "nightly report").await;
    let asking = start(&alice, "ask", "colour survey").await;
    let list = body(
        &call(&alice, "list_background_tasks", json!({})).await,
        false,
    );
    let ids: Vec<&str> = list["tasks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["task_id"].as_str())
        .collect();
    assert_eq!(
        ids,
        [asking.as_str(), report.as_str()],
        "newest first: {list}"
    );

    let detail = body(
        &call(&alice, "get_background_task", json!({"task_id": asking})).await,
        false,
    );
    assert_eq!(detail["status"], "input_required", "{detail}");
    assert!(
        detail["input_request"].to_string().contains("[q1]"),
        "{detail}"
    );
    let answer = json!({"task_id": asking, "request_id": "q1", "answer": {"action": "accept"}});
    let answered = body(&call(&alice, "answer_background_task", answer).await, false);
    assert_eq!(answered, json!({"task_id": asking, "result": "recorded"}));

    let by_name = json!({"name": "nightly report"});
    let cancelled = body(
        &call(&alice, "cancel_background_task", by_name).await,
        false,
    );
    assert_eq!(cancelled, json!({"task_id": report, "result": "requested"}));
    let detail = body(
        &call(&alice, "get_background_task", json!({"task_id": report})).await,
        false,
    );
    assert_eq!(detail["cancel_requested"], true, "{detail}");
}

#[tokio::test]
async fn a_cancel_may_omit_the_task_only_when_one_is_running() {
    let (app, _) = app(false);
    let addr = serve(app).await;
    let alice = client(addr, "tok-alice", Some("alice-2")).await;
    let none = body(
        &call(&alice, "cancel_background_task", json!({})).await,
        true,
    );
    assert!(none["error"].to_string().contains("running"), "{none}");
    let only = start(&alice, "job", "only one").await;
    let cancelled = body(
        &call(&alice, "cancel_background_task", json!({})).await,
        false,
    );
    assert_eq!(cancelled, json!({"task_id": only, "result": "requested"}));
    start(&alice, "job", "a second one").await;
    let two = body(
        &call(&alice, "cancel_background_task", json!({})).await,
        true,
    );
    assert!(
        two["error"].to_string().contains("task_id or name"),
        "{two}"
    );
    let both = json!({"task_id": only, "name": "only one"});
    body(&call(&alice, "cancel_background_task", both).await, true);
}

#[tokio::test]
async fn a_call_without_the_runtime_thread_is_refused() {
    let (app, submits) = app(false);
    let addr = serve(app).await;
    let unbound = client(addr, "tok-alice", None).await;
    let listed = unbound
        .list_all_tools()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(listed.len(), 5, "listing needs no thread");
    for (tool, args) in [
        ("list_background_tasks", json!({})),
        ("get_background_task", json!({"task_id": "t"})),
        ("cancel_background_task", json!({})),
        (
            "start_background_task",
            json!({"server": "fix", "tool": "job", "name": "x"}),
        ),
    ] {
        let refused = body(&call(&unbound, tool, args).await, true);
        let text = refused["error"].as_str().unwrap_or_default();
        assert!(
            text.starts_with("no thread") && text.contains(THREAD_HEADER),
            "{tool}: {text}"
        );
    }
    // A thread argument is no way around it: no tool has one.
    let sneaky = json!({"thread": "alice-1", "thread_id": "alice-1"});
    let refused = body(&call(&unbound, "list_background_tasks", sneaky).await, true);
    assert!(
        refused["error"].to_string().contains("no thread"),
        "{refused}"
    );
    assert_eq!(submits.load(Ordering::SeqCst), 0, "nothing was started");
}

#[tokio::test]
async fn another_owner_sees_and_cancels_nothing_even_naming_the_victims_thread_and_task() {
    let (app, submits) = app(false);
    let addr = serve(app).await;
    let alice = client(addr, "tok-alice", Some("alice-1")).await;
    let victim = start(&alice, "ask", "alice private job").await;
    // Bob's runtime is made to send Alice's thread id.
    let bob = client(addr, "tok-bob", Some("alice-1")).await;
    let list = body(&call(&bob, "list_background_tasks", json!({})).await, false);
    assert_eq!(list, json!({"tasks": []}));
    let not_found = json!({"error": "not found"});
    for (tool, args) in [
        ("get_background_task", json!({"task_id": victim})),
        ("cancel_background_task", json!({"task_id": victim})),
        (
            "cancel_background_task",
            json!({"name": "alice private job"}),
        ),
        (
            "answer_background_task",
            json!({"task_id": victim, "request_id": "q1", "answer": {}}),
        ),
        (
            "start_background_task",
            json!({"server": "fix", "tool": "job", "name": "in alice's"}),
        ),
    ] {
        let refused = body(&call(&bob, tool, args.clone()).await, true);
        assert_eq!(refused, not_found, "{tool} {args}");
    }
    let omitted = body(&call(&bob, "cancel_background_task", json!({})).await, true);
    assert!(
        omitted["error"].to_string().contains("running"),
        "{omitted}"
    );
    assert_eq!(submits.load(Ordering::SeqCst), 1, "bob started nothing");
    let detail = body(
        &call(&alice, "get_background_task", json!({"task_id": victim})).await,
        false,
    );
    assert_eq!(detail["cancel_requested"], false, "{detail}");
    assert_eq!(detail["answer"], Value::Null, "{detail}");
}

#[tokio::test]
async fn read_only_mode_lists_and_serves_only_the_reading_tools() {
    let (app, submits) = app(true);
    let addr = serve(app).await;
    let alice = client(addr, "tok-alice", Some("alice-1")).await;
    let tools = alice
        .list_all_tools()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        names(&tools),
        ["list_background_tasks", "get_background_task"]
    );
    for t in &tools {
        let hints = t.annotations.clone().unwrap_or_default();
        assert_eq!(hints.read_only_hint, Some(true), "{}", t.name);
    }
    let list = body(
        &call(&alice, "list_background_tasks", json!({})).await,
        false,
    );
    assert_eq!(list, json!({"tasks": []}));
    for (tool, args) in [
        (
            "start_background_task",
            json!({"server": "fix", "tool": "job", "name": "x"}),
        ),
        ("cancel_background_task", json!({"name": "x"})),
        (
            "answer_background_task",
            json!({"task_id": "t", "request_id": "q1", "answer": {}}),
        ),
    ] {
        let Value::Object(args) = args else {
            panic!("arguments must be an object")
        };
        let params = CallToolRequestParams::new(tool).with_arguments(args);
        let refused = alice.call_tool(params).await;
        assert!(
            refused.is_err(),
            "{tool} served in read-only mode: {refused:?}"
        );
    }
    assert_eq!(submits.load(Ordering::SeqCst), 0);
}

/// A raw JSON-RPC POST to `/mcp` with `token`, `host` and `body`: the status and the body.
async fn raw_post(
    app: &Router,
    token: Option<&str>,
    host: &str,
    body: String,
) -> (StatusCode, String) {
    let mut req = Request::builder()
        .method(Method::POST)
        .uri("/mcp")
        .header(header::HOST, host)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header(THREAD_HEADER, "alice-1");
    if let Some(t) = token {
        req = req.header(header::AUTHORIZATION, format!("Bearer {t}"));
    }
    let req = req
        .body(axum::body::Body::from(body))
        .unwrap_or_else(|e| panic!("{e}"));
    let res = send(app, req).await;
    let status = res.status();
    let bytes = res
        .into_body()
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

fn initialize(padding: usize) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1", "pad": "x".repeat(padding)}}})
    .to_string()
}

#[tokio::test]
async fn credentials_hosts_and_body_size_are_checked_before_any_tool() {
    let (app, _) = app(false);
    let local = "127.0.0.1:8080";
    let status = |token, host, body| {
        let app = app.clone();
        async move { raw_post(&app, token, host, body).await.0 }
    };
    assert_eq!(
        status(Some("tok-alice"), local, initialize(0)).await,
        StatusCode::OK
    );
    for token in [None, Some("tok-mallory")] {
        let refused = status(token, local, initialize(0)).await;
        assert_eq!(refused, StatusCode::UNAUTHORIZED, "{token:?}");
    }
    let rebound = status(Some("tok-alice"), "evil.example", initialize(0)).await;
    assert_eq!(rebound, StatusCode::FORBIDDEN);
    let large = status(Some("tok-alice"), local, initialize(BODY_LIMIT)).await;
    assert_eq!(large, StatusCode::PAYLOAD_TOO_LARGE);
}

#[tokio::test]
async fn a_plain_http_tools_list_answers_as_the_readme_shows() {
    let (app, _) = app(false);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    let (status, text) = raw_post(&app, Some("tok-alice"), "localhost", list.to_string()).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let tools = answer["result"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(tools.len(), 5, "{text}");
    assert_eq!(tools[0]["name"], "list_background_tasks", "{text}");
    assert_eq!(tools[0]["annotations"]["readOnlyHint"], true, "{text}");
    assert_eq!(tools[2]["annotations"]["destructiveHint"], true, "{text}");
}

#[tokio::test]
async fn tool_calls_are_counted_by_tool_and_outcome() {
    let (app, _) = app(false);
    let addr = serve(app.clone()).await;
    let alice = client(addr, "tok-alice", Some("alice-1")).await;
    start(&alice, "job", "counted").await;
    body(
        &call(&alice, "get_background_task", json!({"task_id": "nope"})).await,
        true,
    );
    let (status, _, text) = support::call(&app, Method::GET, "/metrics", None, None).await;
    assert_eq!(status, StatusCode::OK);
    for line in [
        "tasklatch_mcp_tool_calls_total{tool=\"start_background_task\",outcome=\"ok\"} 1",
        "tasklatch_mcp_tool_calls_total{tool=\"get_background_task\",outcome=\"refused\"} 1",
        "tasklatch_mcp_tool_calls_total{tool=\"cancel_background_task\",outcome=\"ok\"} 0",
        "tasklatch_tasks_submitted_total 1",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
}

/// `fixtures/clients/agent_tools_client.py` run with the pinned fastmcp's Python against
/// `addr`: the JSON object it printed.
fn python_client(addr: SocketAddr, token: &str, thread: &str) -> Value {
    let venv = tasklatch_peers::installed(tasklatch_peers::Peer::FastMcp)
        .unwrap_or_else(|e| panic!("the Python MCP client cannot be installed: {e}"));
    let script = tasklatch_peers::repo_root().join("fixtures/clients/agent_tools_client.py");
    let out = std::process::Command::new(venv.join("bin/python"))
        .arg(&script)
        .args([&format!("http://{addr}/mcp"), token, THREAD_HEADER, thread])
        .env("FASTMCP_CHECK_FOR_UPDATES", "off")
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", script.display()));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{} failed ({}):\n{said}\n{}",
        script.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&said).unwrap_or_else(|e| panic!("{e}: {said}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_client_calls_all_five_tools() {
    let (app, submits) = app(false);
    let addr = serve(app).await;
    let seen = tokio::task::spawn_blocking(move || python_client(addr, "tok-alice", "alice-1"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        !seen.to_string().contains(SECRET),
        "a secret leaked: {seen}"
    );
    assert_eq!(
        seen["tools"],
        json!([
            "answer_background_task",
            "cancel_background_task",
            "get_background_task",
            "list_background_tasks",
            "start_background_task"
        ])
    );
    assert_eq!(seen["hints"]["list_background_tasks"], json!([true, false]));
    assert_eq!(
        seen["hints"]["cancel_background_task"],
        json!([false, true])
    );
    let r = &seen["results"];
    for step in ["start_job", "start_ask", "list", "get", "answer", "cancel"] {
        assert_eq!(r[step]["is_error"], false, "{step}: {}", r[step]);
    }
    let (job, ask) = (
        &r["start_job"]["body"]["task_id"],
        &r["start_ask"]["body"]["task_id"],
    );
    let listed: Vec<&Value> = r["list"]["body"]["tasks"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| &t["task_id"])
        .collect();
    assert_eq!(listed, [ask, job], "newest first: {}", r["list"]);
    assert_eq!(r["get"]["body"]["status"], "input_required", "{}", r["get"]);
    assert_eq!(
        r["answer"]["body"],
        json!({"task_id": ask, "result": "recorded"})
    );
    assert_eq!(
        r["cancel"]["body"],
        json!({"task_id": job, "result": "requested"})
    );
    let refused = &r["list_without_thread"];
    assert_eq!(refused["is_error"], true, "{refused}");
    let text = refused["body"]["error"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("no thread") && text.contains(THREAD_HEADER),
        "{text}"
    );
    assert_eq!(submits.load(Ordering::SeqCst), 2, "two tasks started");
}
