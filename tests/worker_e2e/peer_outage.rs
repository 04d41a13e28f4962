//! Both peers away for three minutes each while deliveries, cancels and answers are in flight
//! (DOMAIN §3 and §6: an outage is waited out and never counted against a budget).
//!
//! One worker reaches fastmcp and `langgraph dev` through relays ([`Relay`]). Two long jobs
//! run, and two jobs have asked a question, delivered to their threads. Then:
//!
//! - at 0 s, six short jobs are submitted and one long job is cancelled, and the Agent Server is
//!   cut off for [`OUTAGE`]: the jobs end and the cancel lands while no notification can start;
//! - at [`STAGGER`], the MCP server is cut off for [`OUTAGE`] too. Once the worker's `/readyz`
//!   says so, the other long job is cancelled and both questions answered: the cancel and the
//!   answers wait for the server;
//! - the Agent Server returns at 180 s, the MCP server at 270 s.
//!
//! Then every state reaches its thread exactly once, in order, as a successful run — with, for
//! the tasks polled during the MCP outage, a "tracking degraded" notification and, for a
//! question still asked, the question again once tracking recovers (DOMAIN §4); no state is
//! told twice without a degraded one between; no row counts a failure or holds a dead letter; both answers were sent (`sent`, not `unconfirmed`);
//! `/readyz` answered 200 throughout and its `peers` said which peer was away; the metrics
//! counted the unavailable answers of launches and cancels and the failed polls, by server.

use super::outage::cancel;
use super::process::Worker;
use super::relay::{through_relay, Relay};
use super::{
    arguments, config, metric, submit_case, wait_runs, wait_working, Case, Kind, Peers, OWNERS,
    RUST_LOG, STAGE_LIMIT,
};
use reqwest::Method;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use tasklatch_core::policy::Policy;
use tasklatch_core::status::{CancelStatus, NotifyStatus};
use tasklatch_core::store::Store;
use tasklatch_core::task::TaskRow;
use tasklatch_peers::free_port;
use tasklatch_pg::harness::TestDb;
use tasklatch_pg::PgStore;

/// How long each peer stays away.
const OUTAGE: Duration = Duration::from_secs(180);
/// When the MCP server goes away after the Agent Server did. The Agent Server returns this
/// long before the MCP server, more than the capped unavailability backoff (60 s), so the
/// "tracking degraded" notifications are delivered before tracking recovers. (Otherwise the
/// recovered question supersedes the undelivered degraded one and the thread is told the
/// question a second time: a known noise, see the issue notes.)
const STAGGER: Duration = Duration::from_secs(90);
/// Short jobs that end while the Agent Server is away.
const SHORT_JOBS: usize = 6;
/// How long the worker may take to notice a peer is away (its polls run every 0.5–2 s).
const NOTICED_WITHIN: Duration = Duration::from_secs(30);

/// Statuses a notification can carry.
const STATUSES: [&str; 5] = [
    "working",
    "input_required",
    "completed",
    "cancelled",
    "failed",
];

/// One notification run as the thread saw it.
struct Told {
    version: u64,
    status: &'static str,
    degraded: bool,
    ended: bool,
}

/// The task's notification runs, oldest first; asserts each belongs to the task, carries a
/// version above the one before (a snapshot superseded before its delivery is never told:
/// DOMAIN §5), holds no secret, and (once ended) succeeded.
async fn told(peers: &Peers, c: &Case, secrets: &[&str]) -> Vec<Told> {
    let runs = peers.notification_runs(&c.thread).await;
    let mut told: Vec<Told> = Vec::new();
    for (k, run) in runs.iter().enumerate() {
        let meta = &run["metadata"];
        assert_eq!(meta["tasklatch_task_id"], json!(c.task), "{}", c.name);
        let version = meta["tasklatch_event_version"]
            .as_u64()
            .unwrap_or_else(|| panic!("{}: run {k} has no version: {run}", c.name));
        let before = told.last().map_or(0, |t| t.version);
        assert!(
            version > before,
            "{}: version {version} after {before}: {runs:?}",
            c.name
        );
        let text = run.to_string();
        assert!(
            secrets.iter().all(|s| !text.contains(s)),
            "{}: a secret",
            c.name
        );
        let input = run["kwargs"]["input"]["messages"][0]["content"]
            .as_str()
            .unwrap_or_default();
        let status = STATUSES
            .into_iter()
            .find(|s| input.contains(&format!("\"status\":\"{s}\"")))
            .unwrap_or_else(|| panic!("{}: run {k} carries no status: {input}", c.name));
        let ended = !matches!(run["status"].as_str(), Some("pending" | "running"));
        if ended {
            assert_eq!(run["status"], json!("success"), "{}: {run}", c.name);
        }
        let degraded = input.contains("\"tracking_degraded\":true");
        told.push(Told {
            version,
            status,
            degraded,
            ended,
        });
    }
    told
}

/// Whether the thread has been told the task's end (its last run ended, not degraded).
fn told_the_end(told: &[Told], c: &Case) -> bool {
    let end = c.expected().last().copied().unwrap_or_default();
    told.last()
        .is_some_and(|t| t.ended && !t.degraded && t.status == end)
}

/// Waits until every thread has been told its task's end.
async fn wait_ends(peers: &Peers, cases: &[Case]) {
    let until = Instant::now() + STAGE_LIMIT;
    loop {
        let mut behind = Vec::new();
        for c in cases {
            if !told_the_end(&told(peers, c, &[]).await, c) {
                behind.push(c.name.as_str());
            }
        }
        if behind.is_empty() {
            return;
        }
        assert!(
            Instant::now() < until,
            "not told their end after {STAGE_LIMIT:?}: {behind:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The thread was told the expected states in order, each once: a state is told again only
/// after a "tracking degraded" notification (tracking recovered), and the last run is the end.
/// Returns the number of runs and the last run's version.
async fn check_told(peers: &Peers, c: &Case, secrets: &[&str]) -> (usize, u64) {
    let told = told(peers, c, secrets).await;
    assert!(told_the_end(&told, c), "{}: the end is not last", c.name);
    let mut plain: Vec<&str> = Vec::new();
    let mut degraded_since = false;
    for t in &told {
        if t.degraded {
            degraded_since = true;
            continue;
        }
        if plain.last() == Some(&t.status) {
            assert!(degraded_since, "{}: `{}` told twice", c.name, t.status);
        } else {
            plain.push(t.status);
        }
        degraded_since = false;
    }
    assert_eq!(plain, c.expected(), "{}: the states told", c.name);
    (told.len(), told.last().map_or(0, |t| t.version))
}

/// The row settled on its end with its last version the last one told, no failure counted,
/// no dead letter of either kind.
fn check_row(rows: &[TaskRow], c: &Case, last_told: u64) {
    let row = rows
        .iter()
        .find(|r| r.id().as_str() == c.task)
        .unwrap_or_else(|| panic!("{} missing", c.name));
    let end = c.expected().last().copied().unwrap_or_default();
    assert_eq!(row.remote.status.as_str(), end, "{}", c.name);
    assert!(row.is_quiet(), "{}: not settled: {:?}", c.name, row.outbox);
    assert_eq!(row.outbox.status, NotifyStatus::Delivered, "{}", c.name);
    assert_eq!(row.outbox.event_version, last_told, "{}", c.name);
    assert_eq!(row.outbox.notified_version, last_told, "{}", c.name);
    let failures = (row.outbox.failures, row.cancel.failures);
    assert_eq!(failures, (0, 0), "{}: counted failures", c.name);
    assert_eq!(row.outbox.dead_letter, None, "{}", c.name);
    assert_ne!(row.cancel.status, CancelStatus::DeadLetter, "{}", c.name);
}

/// Submits job `i` of `kind` for `owner` on a new thread; its case.
async fn submit(w: &Worker, peers: &Peers, i: usize, owner: usize, kind: Kind) -> Case {
    let thread = peers.new_thread(OWNERS[owner].0).await;
    let name = format!("peer-{i:02}");
    let (case, _) = submit_case(w, owner, thread, name, kind, arguments(i, kind)).await;
    case
}

/// The task's detail as its owner sees it.
async fn detail(w: &Worker, c: &Case) -> Value {
    let path = format!("/v1/threads/{}/tasks/{}", c.thread, c.task);
    let (status, d) = w.call(Method::GET, &path, Some(c.token()), None).await;
    assert_eq!(status, 200, "{}: {d}", c.name);
    d
}

/// Answers the question the task asks (its id is the `[…]` of the detail's input request).
async fn answer(w: &Worker, c: &Case) {
    let d = detail(w, c).await;
    let asked = d["input_request"].as_str().unwrap_or_default();
    let question = asked
        .split('[')
        .nth(1)
        .and_then(|s| s.split(']').next())
        .unwrap_or_else(|| panic!("{}: no question id in {d}", c.name));
    let body = json!({
        "request_id": question,
        "answer": {"action": "accept", "content": {"colour": "teal"}},
    });
    let path = format!("/v1/threads/{}/tasks/{}/answer", c.thread, c.task);
    let (status, got) = w
        .call(Method::POST, &path, Some(c.token()), Some(&body))
        .await;
    assert_eq!(status, 200, "{}: answer: {got}", c.name);
}

/// `/readyz`: asserts it is 200 and returns its body's `peers`.
async fn peers_seen(w: &Worker) -> Value {
    let (status, body) = w.call(Method::GET, "/readyz", None, None).await;
    assert_eq!(
        status, 200,
        "the worker stays ready while a peer is away: {body}"
    );
    body["peers"].clone()
}

/// Waits until `/readyz` says the peer at `pointer` (a JSON pointer into `peers`) is
/// `reachable`.
async fn wait_seen(w: &Worker, pointer: &str, reachable: bool) {
    let until = Instant::now() + NOTICED_WITHIN;
    loop {
        let peers = peers_seen(w).await;
        if peers.pointer(pointer) == Some(&json!(reachable)) {
            return;
        }
        assert!(
            Instant::now() < until,
            "{pointer} never became {reachable}: {peers}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Sleeps until `at` after `t0`, checking `/readyz` every few seconds meanwhile.
async fn ready_until(w: &Worker, t0: Instant, at: Duration) {
    while t0.elapsed() < at {
        peers_seen(w).await;
        let left = at.saturating_sub(t0.elapsed());
        tokio::time::sleep(left.min(Duration::from_secs(5))).await;
    }
}

/// The start-up line names the version, the commit, the schema, the MCP servers and the Agent
/// Server (issue 23 item 6).
fn check_started_line(log: &str) {
    let line = log
        .lines()
        .find(|l| l.contains("\"message\":\"worker started\""))
        .unwrap_or_else(|| panic!("no start-up line:\n{log}"));
    let version = format!("\"version\":\"{}\"", env!("CARGO_PKG_VERSION"));
    for field in [
        version.as_str(),
        "\"commit\":\"",
        "\"schema\":\"",
        "\"migrations\":",
        "\"mcp_servers\":\"fix\"",
        "\"agent_server\":\"http://127.0.0.1:",
        "\"assistant\":\"echo\"",
    ] {
        assert!(line.contains(field), "{field} missing: {line}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_peers_away_three_minutes_each_lose_and_count_nothing() {
    // Not one at a time with the other steps: nothing here is timed tighter than the outages
    // (minutes), its worker and peers are its own, and it mostly waits, so it runs beside them.
    let started = Instant::now();
    let dir = std::env::temp_dir().join(format!("tasklatch-e2e-peers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let db = TestDb::create().await;
    let peers = Peers::start(&dir);
    let mcp_relay = Relay::start(&through_relay(&peers.mcp.url("/mcp"), 0).1).await;
    let agent_relay = Relay::start(&through_relay(&peers.langgraph.url(""), 0).1).await;
    let env = [
        ("E2E_DATABASE_URL", db.url().to_owned()),
        ("E2E_MCP_AUTH", format!("Bearer {}", super::MCP_SECRET)),
        ("E2E_AGENT_KEY", super::AGENT_SECRET.to_owned()),
        ("RUST_LOG", RUST_LOG.to_owned()),
    ];
    let mcp_url = through_relay(&peers.mcp.url("/mcp"), mcp_relay.port).0;
    let agent_url = through_relay(&peers.langgraph.url(""), agent_relay.port).0;
    let port = free_port().unwrap_or_else(|e| panic!("{e}"));
    let text = config(port, 2, &mcp_url, &agent_url);
    let mut worker = Worker::new("worker-peers", &dir, &text, port, &env);
    worker.start().await;
    check_started_line(&worker.log());

    let mut long = Vec::new();
    let mut asks = Vec::new();
    for owner in 0..2 {
        long.push(submit(&worker, &peers, owner, owner, Kind::Forever).await);
        asks.push(submit(&worker, &peers, 2 + owner, owner, Kind::Answered).await);
    }
    wait_working(std::slice::from_ref(&worker), &long).await;
    wait_runs(&peers, &asks, |_| 1, "the questions").await;

    // The Agent Server goes away as short jobs start and a long job is cancelled.
    let mut short = Vec::new();
    for i in 0..SHORT_JOBS {
        // 8 to 11 s: none ends before the cut (the submits ask the Agent Server who owns
        // each thread, so they come first).
        let kind = Kind::Slow(8 + (i % 4) as u32);
        short.push(submit(&worker, &peers, 4 + i, i % 2, kind).await);
    }
    let t0 = Instant::now();
    agent_relay.block();
    cancel(&worker, &long[0]).await;
    ready_until(&worker, t0, STAGGER).await;

    // The MCP server goes away too; once the worker has seen it, a cancel and the answers.
    mcp_relay.block();
    wait_seen(&worker, "/mcp_servers/fix/reachable", false).await;
    cancel(&worker, &long[1]).await;
    for c in &asks {
        answer(&worker, c).await;
    }
    ready_until(&worker, t0, OUTAGE).await;
    let agent_seen = peers_seen(&worker).await;
    assert_eq!(
        agent_seen["agent_server"]["reachable"],
        json!(false),
        "the Agent Server is away: {agent_seen}"
    );
    for c in short.iter().chain(&long).chain(&asks) {
        // Only the questions, delivered before the outage, have reached their threads.
        let runs = peers.notification_runs(&c.thread).await;
        let before = usize::from(c.kind == Kind::Answered);
        assert_eq!(runs.len(), before, "{}: {runs:?}", c.name);
    }
    agent_relay.unblock();
    ready_until(&worker, t0, STAGGER + OUTAGE).await;
    mcp_relay.unblock();

    let mut cases = short;
    cases.extend(long);
    cases.extend(asks);
    wait_ends(&peers, &cases).await;
    tokio::time::sleep(Duration::from_secs(3)).await; // anything extra would show now
    let secrets = [super::MCP_SECRET, super::AGENT_SECRET];
    let store = PgStore::new(db.pool().clone(), Policy::default());
    let rows = store
        .admin_rows(None, 1_000)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rows.len(), cases.len(), "one row per task");
    let mut runs = 0;
    for c in &cases {
        let (told, last) = check_told(&peers, c, &secrets).await;
        check_row(&rows, c, last);
        runs += told;
    }
    for c in cases.iter().filter(|c| c.kind == Kind::Answered) {
        let d = detail(&worker, c).await;
        assert_eq!(d["answer"]["status"], json!("sent"), "{}: {d}", c.name);
    }
    let metrics = worker.http_text("/metrics").await;
    for (step, server) in [("launch", "agent_server"), ("cancel", "fix")] {
        let name =
            format!("tasklatch_unavailable_answers_total{{step=\"{step}\",server=\"{server}\"}}");
        assert!(metric(&metrics, &name) > 0.0, "{name} counted nothing");
    }
    let polls = "tasklatch_poll_failures_total{server=\"fix\"}";
    assert!(metric(&metrics, polls) > 0.0, "{polls} counted nothing");
    let (took, status) = worker.term().await;
    assert!(status.success(), "exit {status} after {took:?}");
    db.cleanup().await;
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "Agent Server and MCP server away {} s each ({} s apart): {} tasks, {} runs, every \
         state told once, no failure counted; total {:.1} s",
        OUTAGE.as_secs(),
        STAGGER.as_secs(),
        cases.len(),
        runs,
        started.elapsed().as_secs_f64()
    );
}
