//! Full engine passes (`Engine::run_once` in a real-time loop) over `MemStore` and `PgStore`,
//! with each real driver and the ledger launcher: every task's state changes are delivered
//! exactly once, polls of unchanged states never notify, and a server restart ends a task
//! failed once without a retry storm.

mod support;

use std::time::Duration;
use support::*;
use tasklatch_core::ids::TaskId;
use tasklatch_core::ledger::RunLedger;
use tasklatch_core::mem_store::MemStore;
use tasklatch_core::secret::Secret;
use tasklatch_core::status::{AnswerStatus, RemoteStatus};
use tasklatch_core::store::{AnswerOutcome, AnswerRequest, CancelTarget, Scope, Store};
use tasklatch_mcp::{Protocol, SESSION_LOST};
use tasklatch_pg::harness::TestDb;
use tasklatch_pg::PgStore;

const WITHIN: Duration = Duration::from_secs(30);

/// Asserts the task's one delivered notification: one run, successful, saying `status`.
async fn delivered_once<S: Store>(w: &World<S>, id: &tasklatch_core::ids::TaskId, status: &str) {
    let runs = w.runs_for(id).await;
    assert_eq!(runs.len(), 1, "exactly one run for {id}: {runs:?}");
    assert_eq!(runs[0].key, format!("task:{id}:1:0"));
    assert!(
        runs[0].prompt.contains(&format!("\"status\":\"{status}\"")),
        "{}",
        runs[0].prompt
    );
}

/// slow_job → completed, fails_tool → completed with an error, quick → born completed,
/// forever + cancel → cancelled; each delivered once, nothing more after idle passes.
async fn extension_pass<S: Store>(store: S) {
    let peer = start_fastmcp();
    let w = World::new(store, driver(&peer.url("/mcp"), Protocol::Extension)).await;
    let job = w.submit("slow_job", r#"{"steps": 4, "delay": 0.3}"#).await;
    let raising = w.submit("fails_tool", "{}").await;
    let quick = w.submit("quick", "{}").await;
    let long = w.submit("forever", "{}").await;
    w.until(&long, WITHIN, |r| r.remote.status == RemoteStatus::Working)
        .await;
    w.engine
        .cancel(&scope(), &CancelTarget::Id(long.clone()))
        .await
        .expect("cancel");
    for id in [&job, &raising, &quick, &long] {
        w.until(id, WITHIN, settled).await;
    }
    w.idle(Duration::from_secs(1)).await;
    delivered_once(&w, &job, "completed").await;
    delivered_once(&w, &raising, "completed").await;
    delivered_once(&w, &quick, "completed").await;
    delivered_once(&w, &long, "cancelled").await;
    assert!(w
        .row(&raising)
        .await
        .remote
        .error
        .unwrap()
        .contains("the tool reported an error"));
    assert_eq!(w.row(&long).await.remote.status, RemoteStatus::Cancelled);
    assert_eq!(w.ledger.runs().await.unwrap().len(), 4, "no other run");
}

/// Two research queries: one completes, one is cancelled; each delivered once.
async fn legacy_pass<S: Store>(store: S) {
    let peer = start_everything();
    let w = World::new(store, driver(&peer.url("/mcp"), Protocol::Legacy)).await;
    let done = w
        .submit("simulate-research-query", r#"{"topic": "a"}"#)
        .await;
    let cancelled = w
        .submit("simulate-research-query", r#"{"topic": "b"}"#)
        .await;
    w.until(&cancelled, WITHIN, |r| {
        r.remote.status == RemoteStatus::Working
    })
    .await;
    w.engine
        .cancel(&scope(), &CancelTarget::Id(cancelled.clone()))
        .await
        .expect("cancel");
    for id in [&done, &cancelled] {
        w.until(id, WITHIN, settled).await;
    }
    w.idle(Duration::from_secs(1)).await;
    delivered_once(&w, &done, "completed").await;
    delivered_once(&w, &cancelled, "cancelled").await;
    assert!(w
        .row(&done)
        .await
        .remote
        .result
        .unwrap()
        .contains("Research Report: a"));
    assert_eq!(w.ledger.runs().await.unwrap().len(), 2, "no other run");
}

/// The question ids an input request names (`[q…]`), in order.
fn question_ids(row: &tasklatch_core::task::TaskRow) -> Vec<String> {
    let text = row.remote.input_request.clone().unwrap_or_default();
    text.split('[')
        .skip(1)
        .filter_map(|s| s.split(']').next())
        .map(str::to_owned)
        .collect()
}

/// The user's answer, not JSON: the driver refuses it before sending anything.
const NOT_JSON: &str = "teal-but-not-json";

/// ask_user → input_required → the user's answer recorded through the Store → sent once by the
/// poll loop → completed with the answer; a second answer is refused; an answer the driver
/// refuses ends `failed` without its text showing anywhere. Each state delivered once.
async fn answer_pass<S: Store>(store: S) {
    let peer = start_fastmcp();
    let w = World::new(store, driver(&peer.url("/mcp"), Protocol::Extension)).await;
    let ask = w
        .submit("ask_user", r#"{"question": "Which colour?"}"#)
        .await;
    let bad = w.submit("ask_user", r#"{"question": "Which size?"}"#).await;
    let asking = |r: &tasklatch_core::task::TaskRow| r.remote.status == RemoteStatus::InputRequired;
    let asked = w.until(&ask, WITHIN, asking).await;
    let asked_bad = w.until(&bad, WITHIN, asking).await;
    let q = question_ids(&asked);
    assert_eq!(q.len(), 1, "{:?}", asked.remote.input_request);
    let answer = |id: &TaskId, q: &str, text: &str| AnswerRequest {
        task_id: id.clone(),
        request_id: q.to_owned(),
        text: Secret::new(text),
    };
    let good = r#"{"action": "accept", "content": {"colour": "teal"}}"#;
    let got = w.engine.answer(&scope(), answer(&ask, &q[0], good)).await;
    assert_eq!(got, Ok(AnswerOutcome::Recorded(ask.clone())));
    let got = w.engine.answer(&scope(), answer(&ask, &q[0], good)).await;
    assert_eq!(got, Ok(AnswerOutcome::AlreadyAnswered(ask.clone())));
    let foreign = Scope {
        owner: "mallory".into(),
        thread: scope().thread,
    };
    let got = w.engine.answer(&foreign, answer(&bad, "q1", good)).await;
    assert_eq!(got, Ok(AnswerOutcome::NotFound));
    let q_bad = question_ids(&asked_bad);
    let got = w
        .engine
        .answer(&scope(), answer(&bad, &q_bad[0], NOT_JSON))
        .await;
    assert_eq!(got, Ok(AnswerOutcome::Recorded(bad.clone())));

    let done = w.until(&ask, WITHIN, settled).await;
    assert_eq!(done.remote.status, RemoteStatus::Completed);
    let result = done.remote.result.clone().unwrap_or_default();
    assert!(
        result.contains("teal") && result.contains("accept"),
        "{result}"
    );
    assert_eq!(done.answer.status, AnswerStatus::Sent);
    assert_eq!(done.answer.text, None, "the answer is dropped once sent");
    let refused = w
        .until(&bad, WITHIN, |r| {
            r.answer.status != AnswerStatus::Pending && r.answer.status != AnswerStatus::Sending
        })
        .await;
    assert_eq!(refused.answer.status, AnswerStatus::Failed);
    let error = refused.answer.error.clone().unwrap_or_default();
    assert!(
        error.contains("JSON object") && !error.contains(NOT_JSON),
        "{error}"
    );
    assert_eq!(
        refused.remote.status,
        RemoteStatus::InputRequired,
        "nothing was sent"
    );
    w.idle(Duration::from_secs(1)).await;
    // input_required, then completed: two notifications, none for the answer itself.
    let runs = w.runs_for(&ask).await;
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert!(runs[0].prompt.contains("\"status\":\"input_required\""));
    assert!(runs[1].prompt.contains("\"status\":\"completed\""));
    for run in w.ledger.runs().await.unwrap() {
        assert!(!run.prompt.contains(NOT_JSON), "{}", run.prompt);
    }
    let detail = format!("{:?}", w.engine.detail(&scope(), &bad).await.unwrap());
    assert!(!detail.contains(NOT_JSON), "{detail}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answer_on_mem_store() {
    answer_pass(MemStore::new(fast_policy())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answer_on_pg_store() {
    let db = TestDb::create().await;
    answer_pass(PgStore::new(db.pool().clone(), fast_policy())).await;
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extension_on_mem_store() {
    extension_pass(MemStore::new(fast_policy())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extension_on_pg_store() {
    let db = TestDb::create().await;
    extension_pass(PgStore::new(db.pool().clone(), fast_policy())).await;
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_on_mem_store() {
    legacy_pass(MemStore::new(fast_policy())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_on_pg_store() {
    let db = TestDb::create().await;
    legacy_pass(PgStore::new(db.pool().clone(), fast_policy())).await;
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extension_server_restart_fails_the_task_once_without_a_retry_storm() {
    let mut peer = start_fastmcp();
    let driver = driver(&peer.url("/mcp"), Protocol::Extension);
    let w = World::new(MemStore::new(fast_policy()), driver.clone()).await;
    let id = w.submit("forever", "{}").await;
    w.until(&id, WITHIN, |r| r.remote.status == RemoteStatus::Working)
        .await;
    w.idle(Duration::from_millis(600)).await;
    assert!(
        w.runs_for(&id).await.is_empty(),
        "working polls never notify"
    );
    peer.restart().unwrap_or_else(|e| panic!("restart: {e}"));
    let before = driver.requests_sent();
    let row = w.until(&id, WITHIN, settled).await;
    let spent = driver.requests_sent() - before;
    assert_eq!(row.remote.status, RemoteStatus::Failed);
    assert!(row
        .remote
        .error
        .unwrap()
        .contains("does not know this task"));
    assert!(
        spent <= 3,
        "{spent} requests from the restart to the failure"
    );
    let after = driver.requests_sent();
    w.idle(Duration::from_secs(1)).await;
    assert_eq!(
        driver.requests_sent(),
        after,
        "no request once the task failed"
    );
    delivered_once(&w, &id, "failed").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_session_loss_fails_the_task_once() {
    let mut peer = start_everything();
    let driver = driver(&peer.url("/mcp"), Protocol::Legacy);
    let w = World::new(MemStore::new(fast_policy()), driver.clone()).await;
    let id = w
        .submit("simulate-research-query", r#"{"topic": "lost"}"#)
        .await;
    w.until(&id, WITHIN, |r| r.remote.status == RemoteStatus::Working)
        .await;
    peer.restart().unwrap_or_else(|e| panic!("restart: {e}"));
    let row = w.until(&id, WITHIN, settled).await;
    assert_eq!(row.remote.status, RemoteStatus::Failed);
    assert_eq!(row.remote.error.as_deref(), Some(SESSION_LOST));
    let after = driver.requests_sent();
    w.idle(Duration::from_secs(1)).await;
    assert_eq!(
        driver.requests_sent(),
        after,
        "no request once the task failed"
    );
    delivered_once(&w, &id, "failed").await;
}
