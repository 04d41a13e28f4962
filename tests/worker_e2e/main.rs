//! End to end, real parts only: PostgreSQL, the real MCP server (fastmcp with the tasks
//! extension, `fixtures/servers/tasks_extension_app.py`), `langgraph dev`
//! (`fixtures/servers/langgraph/`) and two `tasklatch worker` processes (the binary; the first
//! with two lanes, the second with one).
//!
//! 50 tasks are submitted through the API under two owners, each on its own Agent Server
//! thread: 40 jobs that complete after 2–8 s, 5 that run until cancelled (by id or by name),
//! 5 that ask the user a question and are then cancelled. Midway through the
//! submits the first worker is SIGKILLed and restarted; right after the cancels the second is
//! SIGTERMed — it must exit within one lease — and restarted. Then:
//!
//! - every task's states arrive exactly once each as a successful run on its own thread,
//!   counted on the Agent Server (jobs: `completed`; long jobs: `cancelled`; questions:
//!   `input_required` then `cancelled`), with versions 1, 2… in order — so no run for an
//!   unchanged state, and none lost or duplicated across the kill and the stop;
//! - no cross-owner listing, detail or cancel succeeds (also with the victim's thread id);
//! - no worker logged a warning or an error (no counted failure, no dead letter), and no row
//!   counts a delivery or cancel failure — the rows released at the SIGTERM counted nothing;
//! - then, under load (100 more 2-second jobs polled and delivered by both workers), the first
//!   worker is SIGTERMed until a stop lands mid-pass and releases claimed rows (each stop within
//!   one lease); after its restart every job is still delivered once and nothing counts a
//!   failure;
//! - neither worker's log (every incarnation, debug level for tasklatch's crates), nor any API
//!   answer, holds a remote task id, the MCP or Agent Server credentials, the database password
//!   or an API token.
//!
//! A second step (`outage.rs`) cuts the database off for a minute while submits and cancels
//! are in flight: every acknowledged submit is still tracked and its end delivered once. A
//! third (`peer_outage.rs`) takes the Agent Server and then the MCP server away for three
//! minutes each while deliveries, cancels and answers are in flight: nothing is dead-lettered,
//! nothing counts a failure, everything is delivered once. A fourth (`failover.rs`) fails the
//! database over three times under load — primary SIGKILLed, synchronous standby promoted, old
//! primary rewound and rejoined — and reads back every acknowledged submit, cancel and answer
//! and every delivery (exactly once).
//!
//! A peer that cannot be installed or started fails the test with the reason (never a skip).

mod failover;
mod failover_load;
mod outage;
mod peer_outage;
mod peers;
mod process;
mod relay;

use peers::Peers;
use process::Worker;
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

/// The steps run one after the other: each times its workers' stops and its peers' work.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const TASKS: usize = 50;
/// Tasks of the stop-under-load phase.
const LOAD_TASKS: usize = 100;
/// SIGTERMs tried under load until one lands while rows are claimed.
const STOP_TRIES: usize = 5;
const LEASE_MS: u64 = 10_000;
/// Long enough (three ticks of 200 ms) for every lane to be waiting in a claim.
const CLAIM_CAUGHT: Duration = Duration::from_millis(600);
const STAGE_LIMIT: Duration = Duration::from_secs(180);
const OWNERS: [(&str, &str); 2] = [
    ("alice", "tok-alice-PLANTED-0001"),
    ("bob", "tok-bob-PLANTED-0002"),
];
const MCP_SECRET: &str = "PLANTED-MCP-TOKEN-7731";
const AGENT_SECRET: &str = "PLANTED-AGENT-KEY-9913";
const DB_PASSWORD: &str = "PLANTED-DB-PASSWORD-5521";
/// Our crates at debug (what they log is what is checked), everything else at info.
const RUST_LOG: &str = "info,tasklatch_worker=debug,tasklatch_core=debug,tasklatch_mcp=debug,tasklatch_agent_server=debug";

#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    /// `slow_job`: completes after this many seconds.
    Slow(u32),
    /// `forever`: runs until cancelled.
    Forever,
    /// `ask_user`: asks a question (input_required), then is cancelled.
    Ask,
    /// `ask_user`: asks a question (input_required), is answered, completes.
    Answered,
}

struct Case {
    owner: usize,
    thread: String,
    name: String,
    kind: Kind,
    task: String,
}

impl Case {
    /// The states the thread must be told about, in order.
    fn expected(&self) -> &'static [&'static str] {
        match self.kind {
            Kind::Slow(_) => &["completed"],
            Kind::Forever => &["cancelled"],
            Kind::Ask => &["input_required", "cancelled"],
            Kind::Answered => &["input_required", "completed"],
        }
    }

    fn token(&self) -> &'static str {
        OWNERS[self.owner].1
    }
}

fn kind_of(i: usize) -> Kind {
    // fastmcp runs at most 10 tasks at once (docket's default): long jobs hold a slot until
    // cancelled, so only 5 of them leave room for everything else.
    match i % 10 {
        8 => Kind::Forever,
        9 => Kind::Ask,
        _ => Kind::Slow(2 + (i % 7) as u32),
    }
}

fn config(port: u16, lanes: usize, mcp_url: &str, agent_url: &str) -> String {
    let hash = |t: &str| tasklatch_worker::token::hash_token(t);
    format!(
        r#"
[database]
url = "env:E2E_DATABASE_URL"
pool_size = {pool}
[loops]
lanes = {lanes}
batch_size = 16
tick_ms = 200
[engine]
poll_interval_ms = 500
max_poll_backoff_ms = 2000
poll_lease_ms = {LEASE_MS}
notify_lease_ms = {LEASE_MS}
cancel_lease_ms = {LEASE_MS}
run_check_interval_ms = 300
retry_base_ms = 300
max_retry_backoff_ms = 2000
release_backoff_ms = 300
min_lease_left_ms = 5000
max_clock_skew_ms = 1000
[http]
listen = "127.0.0.1:{port}"
[auth]
tokens = [{{ owner = "alice", sha256 = "{alice}" }}, {{ owner = "bob", sha256 = "{bob}" }}]
[servers.fix]
url = "{mcp_url}"
protocol = "extension"
request_timeout_ms = 2000
headers = {{ Authorization = "env:E2E_MCP_AUTH" }}
[agent_server]
base_url = "{agent_url}"
assistant_id = "echo"
request_timeout_ms = 2000
owner_metadata_key = "owner"
[agent_server.headers]
x-api-key = "env:E2E_AGENT_KEY"
"#,
        pool = lanes + 4,
        alice = hash(OWNERS[0].1),
        bob = hash(OWNERS[1].1),
    )
}

/// The test database's URL with a planted password (the local server trusts; a configured
/// server's own password is kept).
fn with_password(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => match rest.split_once('@') {
            Some((user, host)) if !user.contains(':') => {
                format!("{scheme}://{user}:{DB_PASSWORD}@{host}")
            }
            _ => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

fn arguments(i: usize, kind: Kind) -> (&'static str, Value) {
    match kind {
        Kind::Slow(secs) => ("slow_job", json!({"steps": secs, "delay": 1.0})),
        Kind::Forever => ("forever", json!({"delay": 0.2})),
        Kind::Ask | Kind::Answered => (
            "ask_user",
            json!({"question": format!("Which colour for job {i}?")}),
        ),
    }
}

async fn submit(
    worker: &Worker,
    i: usize,
    owner: usize,
    thread: String,
    answers: &mut Vec<String>,
) -> Case {
    let kind = if i < TASKS { kind_of(i) } else { Kind::Slow(2) };
    let name = format!("job-{i:03}");
    let (tool, args) = arguments(i, kind);
    let (case, answer) = submit_case(worker, owner, thread, name, kind, (tool, args)).await;
    answers.push(answer.to_string());
    case
}

/// Submits `call` (tool, arguments) as `name` for `owner` on `thread`; asserts 201 and
/// returns the case and the API's answer.
async fn submit_case(
    worker: &Worker,
    owner: usize,
    thread: String,
    name: String,
    kind: Kind,
    call: (&str, Value),
) -> (Case, Value) {
    let body = json!({"server": "fix", "tool": call.0, "arguments": call.1, "name": name});
    let path = format!("/v1/threads/{thread}/tasks");
    let (status, answer) = worker
        .call(Method::POST, &path, Some(OWNERS[owner].1), Some(&body))
        .await;
    assert_eq!(status, 201, "submit {name} to {}: {answer}", worker.name);
    let task = answer["task_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .to_owned();
    let case = Case {
        owner,
        thread,
        name,
        kind,
        task,
    };
    (case, answer)
}

/// Waits until every case's thread has at least `want(case)` ended notification runs; fails at
/// once if one has more than it should ever get.
async fn wait_runs(peers: &Peers, cases: &[Case], want: impl Fn(&Case) -> usize, what: &str) {
    let until = Instant::now() + STAGE_LIMIT;
    loop {
        let mut behind = 0;
        for c in cases {
            let runs = peers.notification_runs(&c.thread).await;
            assert!(
                runs.len() <= c.expected().len(),
                "{}: too many runs: {runs:?}",
                c.name
            );
            let ended = runs
                .iter()
                .filter(|r| !matches!(r["status"].as_str(), Some("pending" | "running")))
                .count();
            behind += usize::from(ended < want(c));
        }
        if behind == 0 {
            return;
        }
        assert!(
            Instant::now() < until,
            "{what}: {behind} threads behind after {STAGE_LIMIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Waits until every `forever` task is `working` (cancelling earlier would be a different test).
async fn wait_working(workers: &[Worker], cases: &[Case]) {
    let until = Instant::now() + STAGE_LIMIT;
    for c in cases.iter().filter(|c| c.kind == Kind::Forever) {
        loop {
            let path = format!("/v1/threads/{}/tasks/{}", c.thread, c.task);
            let (_, d) = workers[0]
                .call(Method::GET, &path, Some(c.token()), None)
                .await;
            if d["status"] == json!("working") {
                break;
            }
            assert!(Instant::now() < until, "{} never worked: {d}", c.name);
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

async fn cancel_all(workers: &[Worker], cases: &[Case], answers: &mut Vec<String>) {
    for (n, c) in cases
        .iter()
        .filter(|c| !matches!(c.kind, Kind::Slow(_)))
        .enumerate()
    {
        let w = &workers[n % 2];
        let (status, answer) = if c.kind == Kind::Forever && n % 2 == 1 {
            let path = format!("/v1/threads/{}/cancel", c.thread);
            w.call(
                Method::POST,
                &path,
                Some(c.token()),
                Some(&json!({"name": c.name})),
            )
            .await
        } else {
            let path = format!("/v1/threads/{}/tasks/{}/cancel", c.thread, c.task);
            w.call(Method::POST, &path, Some(c.token()), None).await
        };
        assert_eq!(
            (status, &answer["result"]),
            (200, &json!("requested")),
            "{}: {answer}",
            c.name
        );
        answers.push(answer.to_string());
    }
}

/// Exactly the expected runs, in order, each successful, for this task, carrying its state.
async fn check_thread(peers: &Peers, c: &Case, secrets: &[String]) {
    let runs = peers.notification_runs(&c.thread).await;
    let expected = c.expected();
    assert_eq!(runs.len(), expected.len(), "{}: {runs:#?}", c.name);
    for (k, (run, state)) in runs.iter().zip(expected).enumerate() {
        let meta = &run["metadata"];
        assert_eq!(run["status"], json!("success"), "{}: {run}", c.name);
        assert_eq!(meta["tasklatch_task_id"], json!(c.task), "{}", c.name);
        assert_eq!(
            meta["tasklatch_event_version"],
            json!(k + 1),
            "{}: {run}",
            c.name
        );
        let input = run["kwargs"]["input"]["messages"][0]["content"]
            .as_str()
            .unwrap_or_default();
        assert!(
            input.contains(&format!("\"status\":\"{state}\"")),
            "{}: run {k} is not `{state}`: {input}",
            c.name
        );
        for s in secrets {
            assert!(
                !run.to_string().contains(s.as_str()),
                "{}: a run carries a secret",
                c.name
            );
        }
    }
}

/// Another owner gets nothing, with the victim's thread id, task id and name.
async fn check_isolation(workers: &[Worker], cases: &[Case], answers: &mut Vec<String>) {
    for c in cases.iter().take(6) {
        let intruder = OWNERS[1 - c.owner].1;
        let w = &workers[c.owner];
        let (s, list) = w
            .call(
                Method::GET,
                &format!("/v1/threads/{}/tasks", c.thread),
                Some(intruder),
                None,
            )
            .await;
        assert_eq!(
            (s, &list),
            (200, &json!({"tasks": []})),
            "{}: cross-owner listing",
            c.name
        );
        let detail = format!("/v1/threads/{}/tasks/{}", c.thread, c.task);
        let (s, d) = w.call(Method::GET, &detail, Some(intruder), None).await;
        assert_eq!(s, 404, "{}: cross-owner detail: {d}", c.name);
        let (s, d) = w
            .call(
                Method::POST,
                &format!("{detail}/cancel"),
                Some(intruder),
                None,
            )
            .await;
        assert_eq!(s, 404, "{}: cross-owner cancel: {d}", c.name);
        let by_name = json!({"name": c.name});
        let (s, d) = w
            .call(
                Method::POST,
                &format!("/v1/threads/{}/cancel", c.thread),
                Some(intruder),
                Some(&by_name),
            )
            .await;
        assert_eq!(s, 404, "{}: cross-owner cancel by name: {d}", c.name);
        // Issue 22 item 3: the victim's thread takes no task of the intruder's (its metadata
        // names the victim), and the answer is a missing thread's.
        let intrusion = json!({"server": "fix", "tool": "slow_job", "arguments": {}, "name": "x"});
        let tasks = format!("/v1/threads/{}/tasks", c.thread);
        let (s, d) = w
            .call(Method::POST, &tasks, Some(intruder), Some(&intrusion))
            .await;
        assert_eq!(
            (s, &d),
            (404, &json!({"error": "not found"})),
            "{}: cross-owner submit",
            c.name
        );
        let (s, d) = w.call(Method::GET, &detail, None, None).await;
        assert_eq!(s, 401, "{}: no token: {d}", c.name);
        let (s, mine) = w.call(Method::GET, &detail, Some(c.token()), None).await;
        assert_eq!(s, 200, "{}: {mine}", c.name);
        answers.extend([list.to_string(), mine.to_string()]);
    }
}

/// Every row settled, as expected, with no counted failure and no dead letter.
fn check_rows(rows: &[TaskRow], cases: &[Case]) {
    assert_eq!(rows.len(), cases.len());
    for c in cases {
        let row = rows
            .iter()
            .find(|r| r.id().as_str() == c.task)
            .unwrap_or_else(|| panic!("{} missing", c.name));
        let final_state = c.expected().last().copied().unwrap_or_default();
        assert_eq!(row.remote.status.as_str(), final_state, "{}", c.name);
        assert!(row.is_quiet(), "{}: not settled: {:?}", c.name, row.outbox);
        assert_eq!(row.outbox.status, NotifyStatus::Delivered, "{}", c.name);
        assert_eq!(
            row.outbox.event_version,
            c.expected().len() as u64,
            "{}",
            c.name
        );
        assert_eq!(
            (row.outbox.failures, row.cancel.failures),
            (0, 0),
            "{}: counted failures",
            c.name
        );
        assert_eq!(row.outbox.dead_letter, None, "{}", c.name);
        assert_ne!(row.cancel.status, CancelStatus::DeadLetter, "{}", c.name);
    }
}

/// SIGTERM `worker` mid-pass while it and the other worker poll and deliver `LOAD_TASKS` jobs:
/// a transaction holds the tasks table in EXCLUSIVE mode (plain reads go on, claims wait), so
/// the worker's next pass is caught inside its claim when the signal arrives; the lock is let
/// go after the signal and the rows that claim returns must be released uncounted. Tried up
/// to `STOP_TRIES` times (a try releases nothing if no row was due); each stop must end
/// within one lease and cleanly. Returns each stop's time and released leases.
async fn stop_under_load(
    db: &TestDb,
    peers: &Peers,
    worker: &mut Worker,
    cases: &mut Vec<Case>,
    answers: &mut Vec<String>,
) -> Vec<(Duration, u64)> {
    for i in TASKS..TASKS + LOAD_TASKS {
        let thread = peers.new_thread(OWNERS[0].0).await;
        cases.push(submit(worker, i, 0, thread, answers).await);
    }
    let mut stops = Vec::new();
    for _ in 0..STOP_TRIES {
        let mut lock = db.pool().begin().await.unwrap_or_else(|e| panic!("{e}"));
        sqlx::query("LOCK TABLE tasks IN EXCLUSIVE MODE")
            .execute(&mut *lock)
            .await
            .unwrap_or_else(|e| panic!("lock the tasks table: {e}"));
        tokio::time::sleep(CLAIM_CAUGHT).await;
        let sent = Instant::now();
        worker.send_term();
        tokio::time::sleep(Duration::from_millis(100)).await;
        lock.rollback().await.unwrap_or_else(|e| panic!("{e}"));
        let (took, status) = worker.wait_exit(sent).await;
        assert!(
            status.success(),
            "{} exit status after SIGTERM: {status}",
            worker.name
        );
        assert!(
            took <= Duration::from_millis(LEASE_MS),
            "{} took {took:?} to stop",
            worker.name
        );
        let released = released_at_stop(&worker.log())
            .unwrap_or_else(|| panic!("no stop summary:\n{}", worker.log_tail()));
        stops.push((took, released));
        worker.start().await;
        if released > 0 {
            break;
        }
    }
    assert!(
        stops.iter().any(|(_, r)| *r > 0),
        "no SIGTERM under load released a claimed row: {stops:?}"
    );
    stops
}

/// The value of an unlabelled sample in a metrics exposition (0 if absent).
fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or(0.0)
}

/// The log lines at WARN or ERROR (JSON lines).
fn warnings(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| l.contains("\"level\":\"WARN\"") || l.contains("\"level\":\"ERROR\""))
        .collect()
}

/// `released_at_stop` of the worker's last "stopped" line.
fn released_at_stop(log: &str) -> Option<u64> {
    log.lines()
        .rev()
        .filter(|l| l.contains("stopped; leases released at stop counted no failure"))
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|v| v["released_at_stop"].as_u64())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_deliver_every_state_once_through_a_kill_and_a_stop() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let started = Instant::now();
    let dir = std::env::temp_dir().join(format!("tasklatch-worker-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let db = TestDb::create().await;
    let peers = Peers::start(&dir);
    let env = [
        ("E2E_DATABASE_URL", with_password(db.url())),
        ("E2E_MCP_AUTH", format!("Bearer {MCP_SECRET}")),
        ("E2E_AGENT_KEY", AGENT_SECRET.to_owned()),
        ("RUST_LOG", RUST_LOG.to_owned()),
    ];
    let (mcp_url, agent_url) = (peers.mcp.url("/mcp"), peers.langgraph.url(""));
    let mut workers = Vec::new();
    for (name, lanes) in [("worker-a", 2), ("worker-b", 1)] {
        let port = free_port().unwrap_or_else(|e| panic!("{e}"));
        let text = config(port, lanes, &mcp_url, &agent_url);
        workers.push(Worker::new(name, &dir, &text, port, &env));
    }
    for w in &mut workers {
        w.start().await;
    }
    let peers_up = started.elapsed();

    // Submit 50 tasks; worker-a is SIGKILLed before task 25 and restarted after task 37.
    let mut answers = Vec::new();
    let mut cases = Vec::new();
    for i in 0..TASKS {
        if i == 25 {
            workers[0].kill();
        }
        if i == 38 {
            workers[0].start().await;
        }
        let owner = i % 2;
        let thread = peers.new_thread(OWNERS[owner].0).await;
        let via = if (25..38).contains(&i) { 1 } else { i % 2 };
        cases.push(submit(&workers[via], i, owner, thread, &mut answers).await);
    }

    // Questions asked (v1 delivered) and long jobs running: cancel them, then SIGTERM worker-b
    // while the cancels, polls and launches are in flight.
    wait_runs(
        &peers,
        &cases,
        |c| usize::from(c.kind == Kind::Ask),
        "questions",
    )
    .await;
    wait_working(&workers, &cases).await;
    cancel_all(&workers, &cases, &mut answers).await;
    let (stop_took, status) = workers[1].term().await;
    assert!(
        status.success(),
        "worker-b exit status after SIGTERM: {status}"
    );
    assert!(
        stop_took <= Duration::from_millis(LEASE_MS),
        "worker-b took {stop_took:?} to stop (lease {LEASE_MS} ms)"
    );
    let released = released_at_stop(&workers[1].log());
    assert!(
        released.is_some(),
        "no stop summary:\n{}",
        workers[1].log_tail()
    );
    workers[1].start().await;

    wait_runs(&peers, &cases, |c| c.expected().len(), "final states").await;

    // Under load: 100 more jobs; SIGTERM worker-a while its pass waits in a claim.
    let stops = stop_under_load(&db, &peers, &mut workers[0], &mut cases, &mut answers).await;
    wait_runs(&peers, &cases, |c| c.expected().len(), "jobs of the load").await;
    tokio::time::sleep(Duration::from_secs(3)).await; // anything extra would show now

    let store = PgStore::new(db.pool().clone(), Policy::default());
    let rows = store
        .admin_rows(None, 1_000)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut secrets: Vec<String> = rows
        .iter()
        .map(|r| r.identity.handle.remote_task_id.expose().to_owned())
        .collect();
    secrets.extend(
        [
            MCP_SECRET,
            AGENT_SECRET,
            DB_PASSWORD,
            OWNERS[0].1,
            OWNERS[1].1,
        ]
        .map(String::from),
    );
    for c in &cases {
        check_thread(&peers, c, &secrets).await;
    }
    check_rows(&rows, &cases);
    check_isolation(&workers, &cases, &mut answers).await;
    let mut latency = (0.0, 0.0);
    for w in &workers {
        let text = w.http_text("/metrics").await;
        latency.0 += metric(&text, "tasklatch_notification_latency_seconds_sum");
        latency.1 += metric(&text, "tasklatch_notification_latency_seconds_count");
    }
    for w in &mut workers {
        let (took, status) = w.term().await;
        assert!(
            status.success() && took <= Duration::from_millis(LEASE_MS),
            "{}: {status} after {took:?}",
            w.name
        );
    }
    for w in &workers {
        let log = w.log();
        assert!(
            warnings(&log).is_empty(),
            "{} logged warnings:\n{}",
            w.name,
            warnings(&log).join("\n")
        );
        for s in &secrets {
            assert!(
                !log.contains(s.as_str()),
                "{} logged a secret ({} chars)",
                w.name,
                s.len()
            );
        }
        assert!(
            log.contains("\"task\":\"tsk_"),
            "{}: no task id in the log: the check would be vacuous",
            w.name
        );
    }
    for a in &answers {
        assert!(
            !secrets.iter().any(|s| a.contains(s.as_str())),
            "an API answer carries a secret: {a}"
        );
    }
    let overview = store.overview().await.unwrap_or_else(|e| panic!("{e}"));
    db.cleanup().await;
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "{} tasks, {} runs, each state once; worker-b stopped in {stop_took:?} releasing {} leases \
         uncounted; worker-a under load stopped (time, leases released uncounted) {stops:?}, no \
         failure counted after the restarts; busy (409) answers {}; notification latency \
         (due → run started) mean {:.1} ms over the last incarnations' {} launches; peers and \
         workers up in {:.1} s; total {:.1} s",
        cases.len(),
        cases.iter().map(|c| c.expected().len()).sum::<usize>(),
        released.unwrap_or_default(),
        overview.busy_total,
        1_000.0 * latency.0 / latency.1.max(1.0),
        latency.1,
        peers_up.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
}
