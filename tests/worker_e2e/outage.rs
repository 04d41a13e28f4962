//! The database unreachable for a minute while submits and cancels are in flight (DOMAIN §7:
//! a submit the API acknowledged is never forgotten).
//!
//! One worker reaches PostgreSQL and the MCP server through relays ([`Relay`]). Two long jobs
//! run; the MCP server's answers are then held back 0.8 s a chunk, four short jobs are submitted
//! at once and both long jobs cancelled, and while those calls are in the MCP server's hands
//! the database is cut off (every connection closed, new ones refused) for 60 s. Two more
//! submits arrive during the outage. Then the database comes back, and:
//!
//! - every submit was answered 201, or 503 "do not submit it again", or 503 "not started…
//!   submitting it again is safe" — at least one of the first four the second kind, since its
//!   handle could not be saved;
//! - every 201 and every "do not submit it again" is a tracked task whose end (`completed`,
//!   or `cancelled` for the long jobs) reaches its thread exactly once, as version 1;
//! - a "not started" submit left nothing: no task in its thread, no run.

use super::process::Worker;
use super::relay::{through_relay, Relay};
use super::{
    check_thread, config, wait_runs, wait_working, with_password, Case, Kind, Peers, OWNERS,
    RUST_LOG,
};
use reqwest::Method;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use tasklatch_core::policy::Policy;
use tasklatch_core::status::NotifyStatus;
use tasklatch_core::store::Store;
use tasklatch_peers::free_port;
use tasklatch_pg::harness::TestDb;
use tasklatch_pg::PgStore;

/// How long the database stays unreachable.
const OUTAGE: Duration = Duration::from_secs(60);
/// How long the MCP server's answers are held back while the outage begins.
const SLOW_MCP: Duration = Duration::from_millis(800);
/// Short jobs submitted as the outage begins, and during it.
const AT_THE_CUT: usize = 4;
const DURING: usize = 2;

/// What a submit's answer promised.
#[derive(PartialEq, Debug)]
enum Answer {
    Created(String),
    DoNotResubmit,
    NotStarted,
}

fn answer_of(status: u16, body: &Value) -> Answer {
    let error = body["error"].as_str().unwrap_or_default();
    match status {
        201 => Answer::Created(body["task_id"].as_str().unwrap_or_default().to_owned()),
        503 if error.contains("do not submit it again") => Answer::DoNotResubmit,
        503 if error.contains("submitting it again is safe") => Answer::NotStarted,
        _ => panic!("unexpected submit answer {status}: {body}"),
    }
}

async fn post_submit(w: &Worker, owner: usize, thread: &str, name: &str, kind: Kind) -> Answer {
    let (tool, args) = match kind {
        Kind::Forever => ("forever", json!({"delay": 0.2})),
        _ => ("slow_job", json!({"steps": 3, "delay": 1.0})),
    };
    let body = json!({"server": "fix", "tool": tool, "arguments": args, "name": name});
    let path = format!("/v1/threads/{thread}/tasks");
    let (status, answer) = w
        .call(Method::POST, &path, Some(OWNERS[owner].1), Some(&body))
        .await;
    answer_of(status, &answer)
}

/// The thread's tasks as its owner lists them (ids).
async fn listed(w: &Worker, owner: usize, thread: &str) -> Vec<String> {
    let path = format!("/v1/threads/{thread}/tasks");
    let (status, list) = w
        .call(Method::GET, &path, Some(OWNERS[owner].1), None)
        .await;
    assert_eq!(status, 200, "listing {thread}: {list}");
    list["tasks"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t["task_id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

struct Pending {
    owner: usize,
    thread: String,
    name: String,
    kind: Kind,
    answer: Answer,
}

/// The threads of the submits of the cut: (owner, thread, name).
async fn cut_threads(peers: &Peers) -> Vec<(usize, String, String)> {
    let mut threads = Vec::new();
    for i in 0..AT_THE_CUT {
        let owner = i % 2;
        let thread = peers.new_thread(OWNERS[owner].0).await;
        threads.push((owner, thread, format!("cut-{i}")));
    }
    threads
}

/// Submits short jobs on `threads` together; their answers, in order.
async fn submit_together(w: &Worker, threads: &[(usize, String, String)]) -> Vec<Pending> {
    let calls = threads.iter().map(|(owner, thread, name)| async move {
        let answer = post_submit(w, *owner, thread, name, Kind::Slow(3)).await;
        Pending {
            owner: *owner,
            thread: thread.clone(),
            name: name.clone(),
            kind: Kind::Slow(3),
            answer,
        }
    });
    futures::future::join_all(calls).await
}

pub(super) async fn cancel(w: &Worker, c: &Case) {
    let path = format!("/v1/threads/{}/tasks/{}/cancel", c.thread, c.task);
    let (status, answer) = w.call(Method::POST, &path, Some(c.token()), None).await;
    assert_eq!(
        (status, &answer["result"]),
        (200, &json!("requested")),
        "{}: {answer}",
        c.name
    );
}

/// Cases for the acknowledged submits (a "do not resubmit" task found by listing its thread);
/// asserts a "not started" one left nothing behind.
async fn settle(w: &Worker, pending: Vec<Pending>) -> (Vec<Case>, usize) {
    let mut cases = Vec::new();
    let mut unconfirmed = 0;
    for p in pending {
        let ids = listed(w, p.owner, &p.thread).await;
        let task = match p.answer {
            Answer::NotStarted => {
                assert!(
                    ids.is_empty(),
                    "{}: not started, yet listed {ids:?}",
                    p.name
                );
                continue;
            }
            Answer::Created(id) => id,
            Answer::DoNotResubmit => {
                unconfirmed += 1;
                assert_eq!(ids.len(), 1, "{}: acknowledged, listed {ids:?}", p.name);
                ids[0].clone()
            }
        };
        cases.push(Case {
            owner: p.owner,
            thread: p.thread,
            name: p.name,
            kind: p.kind,
            task,
        });
    }
    (cases, unconfirmed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_submits_survive_a_minute_without_the_database() {
    let _alone = super::ONE_AT_A_TIME.lock().await;
    let started = Instant::now();
    let dir = std::env::temp_dir().join(format!("tasklatch-e2e-outage-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let db = TestDb::create().await;
    let peers = Peers::start(&dir);
    let db_relay = Relay::start(&through_relay(db.url(), 0).1).await;
    let mcp_relay = Relay::start(&through_relay(&peers.mcp.url("/mcp"), 0).1).await;
    let env = [
        (
            "E2E_DATABASE_URL",
            with_password(&through_relay(db.url(), db_relay.port).0),
        ),
        ("E2E_MCP_AUTH", format!("Bearer {}", super::MCP_SECRET)),
        ("E2E_AGENT_KEY", super::AGENT_SECRET.to_owned()),
        ("RUST_LOG", RUST_LOG.to_owned()),
    ];
    let mcp_url = through_relay(&peers.mcp.url("/mcp"), mcp_relay.port).0;
    let port = free_port().unwrap_or_else(|e| panic!("{e}"));
    let text = config(port, 2, &mcp_url, &peers.langgraph.url(""));
    let mut worker = Worker::new("worker-outage", &dir, &text, port, &env);
    worker.start().await;

    let mut cases = Vec::new();
    for (owner, (who, _)) in OWNERS.iter().enumerate() {
        let thread = peers.new_thread(who).await;
        let name = format!("long-{owner}");
        let answer = post_submit(&worker, owner, &thread, &name, Kind::Forever).await;
        let Answer::Created(task) = answer else {
            panic!("{name}: not created with the database up: {answer:?}");
        };
        cases.push(Case {
            owner,
            thread,
            name,
            kind: Kind::Forever,
            task,
        });
    }
    wait_working(std::slice::from_ref(&worker), &cases).await;

    // The cut: submits and cancels in the MCP server's hands when the database goes away.
    mcp_relay.delay_answers(SLOW_MCP);
    let threads = cut_threads(&peers).await;
    let cut = async {
        for c in &cases {
            cancel(&worker, c).await;
        }
        tokio::time::sleep(Duration::from_millis(400)).await;
        db_relay.block();
        Instant::now()
    };
    let (mut pending, cut_at) = tokio::join!(submit_together(&worker, &threads), cut);
    for i in 0..DURING {
        let owner = i % 2;
        let thread = peers.new_thread(OWNERS[owner].0).await;
        let name = format!("during-{i}");
        let answer = post_submit(&worker, owner, &thread, &name, Kind::Slow(3)).await;
        assert_eq!(answer, Answer::NotStarted, "{name}: the database is down");
        pending.push(Pending {
            owner,
            thread,
            name,
            kind: Kind::Slow(3),
            answer,
        });
    }
    mcp_relay.delay_answers(Duration::ZERO);
    tokio::time::sleep(OUTAGE.saturating_sub(cut_at.elapsed())).await;
    db_relay.unblock();
    let outage = cut_at.elapsed();

    let (acknowledged, unconfirmed) = settle(&worker, pending).await;
    assert!(
        unconfirmed >= 1,
        "no submit met the cut between its remote call and its handle write: the step tests \
         nothing"
    );
    cases.extend(acknowledged);
    wait_runs(&peers, &cases, |c| c.expected().len(), "after the outage").await;
    tokio::time::sleep(Duration::from_secs(3)).await; // anything extra would show now
    let secrets = vec![super::MCP_SECRET.to_owned(), super::AGENT_SECRET.to_owned()];
    for c in &cases {
        check_thread(&peers, c, &secrets).await;
    }
    let store = PgStore::new(db.pool().clone(), Policy::default());
    let rows = store
        .admin_rows(None, 1_000)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rows.len(), cases.len(), "one row per acknowledged submit");
    for r in &rows {
        assert_eq!(r.outbox.status, NotifyStatus::Delivered, "{:?}", r.outbox);
    }
    let (took, status) = worker.term().await;
    assert!(status.success(), "exit {status} after {took:?}");
    db.cleanup().await;
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "database unreachable {:.1} s; {} tasks tracked and delivered once ({} answered \"do not \
         submit it again\"), {} refused as not started; total {:.1} s",
        outage.as_secs_f64(),
        cases.len(),
        unconfirmed,
        DURING,
        started.elapsed().as_secs_f64()
    );
}
