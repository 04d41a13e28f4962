//! The worker starts with its peers down (issue 23 item 4): with nothing listening on the Agent
//! Server's port, the worker starts, `/readyz` is 200 (readiness is about the database and the
//! lanes) and its body says the Agent Server is unreachable, the API serves; once an Agent
//! Server appears on that port, the background assistant check finds it and the body says it is
//! reachable. A server that answers that the assistant does not exist is still refused at start
//! (a configuration error, not an outage).

#[path = "support/live.rs"]
mod live;

use live::{
    agent_server_double, config, free_port, settings, LiveWorker, ASSISTANT_FOUND,
    ASSISTANT_MISSING, TOKEN,
};
use serde_json::Value;
use std::net::TcpListener;
use std::time::{Duration, Instant};
use tasklatch_pg::harness::TestDb;
use tasklatch_worker::StartError;

/// How long the worker may take to see an Agent Server that appeared: the background check
/// waits 1 s doubling to 30 s, so a server that appears within 2 s of the start is asked
/// again within 7 s of it; the bound leaves room for a slow machine.
const SEEN_WITHIN: Duration = Duration::from_secs(40);

fn readiness(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worker_starts_with_the_agent_server_down_and_sees_it_come_back() {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let db = TestDb::create().await;
    let (port, mcp, agent) = (free_port(), free_port(), free_port());
    let started = Instant::now();
    let worker = LiveWorker::start(settings(&config(port, mcp, agent), db.url()))
        .await
        .unwrap_or_else(|e| panic!("the worker refused to start with the agent server down: {e}"));
    eprintln!(
        "ready with the agent server down after {:?}",
        started.elapsed()
    );

    let (status, body) = worker.get("/readyz", None).await;
    assert_eq!(status, 200, "{body}");
    let r = readiness(&body);
    assert_eq!(r["ready"], true, "{body}");
    let a = &r["peers"]["agent_server"];
    assert_eq!(a["reachable"], false, "{body}");
    assert!(a["last_failure"].is_string(), "{body}");
    assert!(a["last_success"].is_null(), "{body}");
    assert_eq!(a["assistant"], "unchecked", "{body}");
    let research = &r["peers"]["mcp_servers"]["research"];
    assert!(research["reachable"].is_null(), "never contacted: {body}");
    let (status, list) = worker.get("/v1/threads/t1/tasks", Some(TOKEN)).await;
    assert_eq!(status, 200, "the API serves: {list}");
    let (_, metrics) = worker.get("/metrics", None).await;
    assert!(
        metrics.contains("tasklatch_peer_up{kind=\"agent_server\",peer=\"agent_server\"} 0"),
        "{metrics}"
    );

    let listener = TcpListener::bind(("127.0.0.1", agent)).unwrap_or_else(|e| panic!("{e}"));
    agent_server_double(listener, ASSISTANT_FOUND);
    let appeared = Instant::now();
    let body = loop {
        let (status, body) = worker.get("/readyz", None).await;
        assert_eq!(status, 200, "{body}");
        if readiness(&body)["peers"]["agent_server"]["reachable"] == true {
            break body;
        }
        assert!(
            appeared.elapsed() < SEEN_WITHIN,
            "the agent server is still unreachable {SEEN_WITHIN:?} after it appeared: {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let seen = appeared.elapsed();
    let a = &readiness(&body)["peers"]["agent_server"];
    assert_eq!(a["assistant"], "found", "{body}");
    assert!(a["last_success"].is_string(), "{body}");
    assert!(
        a["last_failure"].is_string(),
        "the last failure is kept: {body}"
    );
    let (_, metrics) = worker.get("/metrics", None).await;
    assert!(
        metrics.contains("tasklatch_peer_up{kind=\"agent_server\",peer=\"agent_server\"} 1"),
        "{metrics}"
    );
    eprintln!("the agent server was seen reachable {seen:?} after it appeared");
    worker.kill().await;
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_assistant_is_still_refused_at_start() {
    let db = TestDb::create().await;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let agent = listener.local_addr().map(|a| a.port()).unwrap_or_default();
    agent_server_double(listener, ASSISTANT_MISSING);
    let (port, mcp) = (free_port(), free_port());
    let refused = LiveWorker::start(settings(&config(port, mcp, agent), db.url())).await;
    match refused {
        Err(e @ StartError::AgentServer(_)) => {
            assert!(e.to_string().contains("not found"), "{e}");
        }
        Err(e) => panic!("refused for another reason: {e}"),
        Ok(w) => {
            w.kill().await;
            panic!("a worker whose assistant does not exist started");
        }
    }
    db.cleanup().await;
}
