//! The load of the failover step (`failover.rs`): rounds of submits, cancels and answers through
//! both workers' APIs while the database fails over, retried by the client when a call is
//! refused as safe to repeat; and the read-back afterwards, which lists every way an
//! acknowledged write went missing or a state change was not delivered exactly once.
//!
//! Nothing here panics on a lost write: each is recorded as an [`Anomaly`], so the synchronous
//! step can assert there are none and the asynchronous control can count them.

use super::process::Worker;
use super::{arguments, Case, Kind, Peers, OWNERS};
use reqwest::Method;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tasklatch_core::status::NotifyStatus;
use tasklatch_core::task::TaskRow;

/// The kinds of one round: two short jobs, a long job cancelled once it works, a question
/// answered once it is asked.
const ROUND: [Kind; 4] = [Kind::Slow(1), Kind::Slow(2), Kind::Forever, Kind::Answered];
/// Between the submits of the stream.
const STREAM_GAP: Duration = Duration::from_millis(100);
/// Between retries of a call refused as safe to repeat.
const RETRY_AFTER: Duration = Duration::from_millis(200);
/// How long a task may take to reach the state a round waits for (working, asking).
const STATE_WITHIN: Duration = Duration::from_secs(60);
/// How long a submit answered "do not submit it again" may take to be listed in its thread.
const LISTED_WITHIN: Duration = Duration::from_secs(30);

/// How an acknowledged write went missing, or a delivery was not exactly once.
#[derive(Clone, Copy, PartialEq, Eq, Debug, PartialOrd, Ord)]
pub(super) enum Loss {
    /// An acknowledged submit (201, or 503 "do not submit it again") has no task.
    Submit,
    /// An acknowledged cancel did not end its task as `cancelled`.
    Cancel,
    /// An acknowledged answer was not sent.
    Answer,
    /// A state change was not delivered (fewer runs than states, or a run not successful).
    Delivery,
    /// A state change was delivered more than once, or a task exists that nothing acknowledged.
    Duplicate,
}

/// One lost or duplicated thing, with what was seen.
#[derive(Debug)]
pub(super) struct Anomaly {
    pub loss: Loss,
    pub what: String,
}

/// What the load did and what the read-back found.
#[derive(Default)]
pub(super) struct Load {
    /// Acknowledged submits (their task ids resolved).
    pub cases: Vec<Case>,
    /// Threads of submits refused as safe to repeat (owner, thread): nothing may be left there.
    pub refused: Vec<(usize, String)>,
    /// Submits answered 503 "do not submit it again".
    pub unconfirmed: usize,
    /// Acknowledged cancels and answers.
    pub cancels: usize,
    pub answers: usize,
    /// Answers whose send a failover left `unconfirmed` (their task completed all the same).
    pub unconfirmed_answers: usize,
    /// Calls refused as unavailable and repeated by the client.
    pub retries: usize,
    pub anomalies: Vec<Anomaly>,
    /// When each submit call was sent and answered (every attempt).
    pub spans: Vec<(Instant, Instant)>,
    next: usize,
}

impl Load {
    fn lost(&mut self, loss: Loss, what: String) {
        self.anomalies.push(Anomaly { loss, what });
    }

    /// How many anomalies of `loss`.
    pub fn count(&self, loss: Loss) -> usize {
        self.anomalies.iter().filter(|a| a.loss == loss).count()
    }
}

/// What a submit's answer said.
enum Submitted {
    Created(String),
    DoNotResubmit,
    SafeToRepeat,
}

fn submitted(status: u16, body: &Value) -> Result<Submitted, String> {
    let error = body["error"].as_str().unwrap_or_default();
    match status {
        201 => body["task_id"]
            .as_str()
            .map(|t| Submitted::Created(t.to_owned()))
            .ok_or_else(|| format!("201 without a task id: {body}")),
        503 if error.contains("do not submit it again") => Ok(Submitted::DoNotResubmit),
        503 if error.contains("submitting it again is safe") || error.contains("try again") => {
            Ok(Submitted::SafeToRepeat)
        }
        _ => Err(format!("unexpected submit answer {status}: {body}")),
    }
}

/// Submits a task of `kind` for `owner` on a new thread until it is acknowledged; each refusal
/// "safe to repeat" leaves its thread in `load.refused` and is tried again on a new thread.
/// Returns the case, or `None` when a "do not submit it again" never showed up (a loss).
pub(super) async fn submit(
    workers: &[Worker],
    peers: &Peers,
    kind: Kind,
    load: &mut Load,
) -> Option<Case> {
    let i = load.next;
    load.next += 1;
    let (owner, name) = (i % 2, format!("fo-{kind:?}-{i:04}"));
    let (tool, args) = arguments(i, kind);
    let body = json!({"server": "fix", "tool": tool, "arguments": args, "name": name});
    for attempt in 0.. {
        let thread = peers.new_thread(OWNERS[owner].0).await;
        let w = &workers[(i + attempt) % workers.len()];
        let path = format!("/v1/threads/{thread}/tasks");
        let sent = Instant::now();
        let (status, answer) = w
            .call(Method::POST, &path, Some(OWNERS[owner].1), Some(&body))
            .await;
        load.spans.push((sent, Instant::now()));
        let task = match submitted(status, &answer).unwrap_or_else(|e| panic!("{name}: {e}")) {
            Submitted::Created(task) => task,
            Submitted::SafeToRepeat => {
                load.retries += 1;
                load.refused.push((owner, thread));
                tokio::time::sleep(RETRY_AFTER).await;
                continue;
            }
            Submitted::DoNotResubmit => {
                load.unconfirmed += 1;
                match listed_within(w, owner, &thread, LISTED_WITHIN).await {
                    Some(task) => task,
                    None => {
                        load.lost(
                            Loss::Submit,
                            format!("{name}: \"do not submit it again\", never listed"),
                        );
                        return None;
                    }
                }
            }
        };
        let case = Case {
            owner,
            thread,
            name,
            kind,
            task,
        };
        return Some(case);
    }
    None
}

/// The thread's tasks as its owner lists them (ids), repeating a 503.
pub(super) async fn listed(w: &Worker, owner: usize, thread: &str) -> Vec<String> {
    let path = format!("/v1/threads/{thread}/tasks");
    loop {
        let (status, list) = w
            .call(Method::GET, &path, Some(OWNERS[owner].1), None)
            .await;
        match status {
            200 => {
                let tasks = list["tasks"].as_array().cloned().unwrap_or_default();
                return tasks
                    .iter()
                    .filter_map(|t| t["task_id"].as_str().map(str::to_owned))
                    .collect();
            }
            503 => tokio::time::sleep(RETRY_AFTER).await,
            _ => panic!("listing {thread}: {status} {list}"),
        }
    }
}

/// The one task listed in `thread` within `within`, if any shows up.
async fn listed_within(w: &Worker, owner: usize, thread: &str, within: Duration) -> Option<String> {
    let until = Instant::now() + within;
    while Instant::now() < until {
        if let Some(task) = listed(w, owner, thread).await.into_iter().next() {
            return Some(task);
        }
        tokio::time::sleep(RETRY_AFTER).await;
    }
    None
}

/// The task's detail as its owner sees it (repeating a 503); `None` when it is not found.
pub(super) async fn detail(w: &Worker, c: &Case) -> Option<Value> {
    let path = format!("/v1/threads/{}/tasks/{}", c.thread, c.task);
    loop {
        let (status, d) = w.call(Method::GET, &path, Some(c.token()), None).await;
        match status {
            200 => return Some(d),
            404 => return None,
            503 => tokio::time::sleep(RETRY_AFTER).await,
            _ => panic!("{}: detail {status} {d}", c.name),
        }
    }
}

/// Waits until `ready` holds for the task's detail; the detail, or why not (gone, or not
/// within [`STATE_WITHIN`]).
async fn wait_detail(
    w: &Worker,
    c: &Case,
    ready: impl Fn(&Value) -> bool,
) -> Result<Value, String> {
    let until = Instant::now() + STATE_WITHIN;
    loop {
        let d = detail(w, c)
            .await
            .ok_or_else(|| format!("{}: not found", c.name))?;
        if ready(&d) {
            return Ok(d);
        }
        if Instant::now() > until {
            return Err(format!("{}: still {d} after {STATE_WITHIN:?}", c.name));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Cancels the long job once it works, repeating a 503 until acknowledged.
async fn cancel_when_working(w: &Worker, c: &Case, load: &mut Load) {
    if let Err(e) = wait_detail(w, c, |d| d["status"] == json!("working")).await {
        return load.lost(Loss::Submit, e);
    }
    let path = format!("/v1/threads/{}/tasks/{}/cancel", c.thread, c.task);
    loop {
        let (status, answer) = w.call(Method::POST, &path, Some(c.token()), None).await;
        match status {
            200 => {
                load.cancels += 1;
                return;
            }
            503 => load.retries += 1,
            _ => {
                return load.lost(
                    Loss::Submit,
                    format!("{}: cancel {status} {answer}", c.name),
                )
            }
        }
        tokio::time::sleep(RETRY_AFTER).await;
    }
}

/// Answers the question once it is asked (its id is the `[…]` of the detail's input request),
/// repeating a 503; a 409 after a 503 means the repeated answer was recorded the first time.
async fn answer_when_asked(w: &Worker, c: &Case, load: &mut Load) {
    let asked = |d: &Value| d["input_request"].as_str().is_some_and(|q| q.contains('['));
    let d = match wait_detail(w, c, asked).await {
        Ok(d) => d,
        Err(e) => return load.lost(Loss::Submit, e),
    };
    let question = d["input_request"].as_str().unwrap_or_default();
    let id = question.split('[').nth(1).and_then(|s| s.split(']').next());
    let body = json!({
        "request_id": id.unwrap_or_default(),
        "answer": {"action": "accept", "content": {"colour": "teal"}},
    });
    let path = format!("/v1/threads/{}/tasks/{}/answer", c.thread, c.task);
    let mut repeated = false;
    loop {
        let (status, got) = w
            .call(Method::POST, &path, Some(c.token()), Some(&body))
            .await;
        match status {
            200 => break,
            409 if repeated => break,
            503 => (load.retries, repeated) = (load.retries + 1, true),
            _ => return load.lost(Loss::Answer, format!("{}: answer {status} {got}", c.name)),
        }
        tokio::time::sleep(RETRY_AFTER).await;
    }
    load.answers += 1;
}

/// One round: the [`ROUND`] submits, then the cancel and the answer (through the other worker).
pub(super) async fn round(workers: &[Worker], peers: &Peers, load: &mut Load) {
    let mut cases = Vec::new();
    for kind in ROUND {
        cases.extend(submit(workers, peers, kind, load).await);
    }
    for (n, c) in cases.iter().enumerate() {
        let w = &workers[(n + 1) % workers.len()];
        match c.kind {
            Kind::Forever => cancel_when_working(w, c, load).await,
            Kind::Answered => answer_when_asked(w, c, load).await,
            _ => {}
        }
    }
    load.cases.extend(cases);
}

/// Rounds until `stop` is set; how many.
pub(super) async fn drive(
    workers: &[Worker],
    peers: &Peers,
    stop: &AtomicBool,
    load: &mut Load,
) -> usize {
    let mut rounds = 0;
    while !stop.load(Ordering::SeqCst) {
        round(workers, peers, load).await;
        rounds += 1;
    }
    rounds
}

/// Submits short jobs back to back (a pause of [`STREAM_GAP`] between) until `stop` is set, so
/// that calls are in flight whenever the primary goes away; how many were acknowledged.
pub(super) async fn stream(
    workers: &[Worker],
    peers: &Peers,
    stop: &AtomicBool,
    load: &mut Load,
) -> usize {
    let before = load.cases.len();
    while !stop.load(Ordering::SeqCst) {
        let case = submit(workers, peers, Kind::Slow(1), load).await;
        load.cases.extend(case);
        tokio::time::sleep(STREAM_GAP).await;
    }
    load.cases.len() - before
}

impl Load {
    /// Takes in what `other` did and found.
    pub fn absorb(&mut self, other: Load) {
        self.cases.extend(other.cases);
        self.refused.extend(other.refused);
        self.unconfirmed += other.unconfirmed;
        self.cancels += other.cancels;
        self.answers += other.answers;
        self.unconfirmed_answers += other.unconfirmed_answers;
        self.retries += other.retries;
        self.anomalies.extend(other.anomalies);
        self.spans.extend(other.spans);
    }
}

/// Waits up to `within` until every case's thread has as many ended runs as it has states;
/// how many are still behind.
pub(super) async fn settle(peers: &Peers, cases: &[Case], within: Duration) -> usize {
    let until = Instant::now() + within;
    loop {
        let mut behind = 0;
        for c in cases {
            let runs = peers.notification_runs(&c.thread).await;
            let ended = runs
                .iter()
                .filter(|r| !matches!(r["status"].as_str(), Some("pending" | "running")))
                .count();
            behind += usize::from(ended < c.expected().len());
        }
        if behind == 0 || Instant::now() > until {
            return behind;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The state a notification run carries (`"status":"…"` in its input).
fn state_of(run: &Value) -> String {
    let input = run["kwargs"]["input"]["messages"][0]["content"]
        .as_str()
        .unwrap_or_default();
    input
        .split("\"status\":\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap_or_default()
        .to_owned()
}

/// Reads back one case's runs on the Agent Server: each state once, in order, successful.
async fn read_back_runs(peers: &Peers, c: &Case, load: &mut Load) {
    let runs = peers.notification_runs(&c.thread).await;
    let told: Vec<String> = runs.iter().map(state_of).collect();
    let expected = c.expected();
    let what = format!(
        "{} ({:?}): told {told:?}, expected {expected:?}",
        c.name, c.kind
    );
    if told.len() > expected.len() {
        return load.lost(Loss::Duplicate, what);
    }
    for (k, run) in runs.iter().enumerate() {
        let in_order = run["metadata"]["tasklatch_event_version"] == json!(k + 1);
        if run["status"] != json!("success") || told[k] != expected[k] || !in_order {
            let loss = match (c.kind, expected[k]) {
                (Kind::Forever | Kind::Ask, "cancelled") => Loss::Cancel,
                (Kind::Answered, "completed") => Loss::Answer,
                _ => Loss::Delivery,
            };
            return load.lost(loss, format!("{what}; run {k}: {run}"));
        }
    }
    if told.len() < expected.len() {
        let loss = match (c.kind, expected[told.len()]) {
            (Kind::Forever, "cancelled") => Loss::Cancel,
            (Kind::Answered, "completed") => Loss::Answer,
            _ => Loss::Delivery,
        };
        load.lost(loss, what);
    }
}

/// Reads back everything the load was acknowledged: every case's runs; its row on the final
/// primary (present, final state, delivered); an answered question's answer `sent`; no task in
/// a thread whose submit was refused, and no row that no case accounts for.
pub(super) async fn read_back(
    workers: &[Worker],
    peers: &Peers,
    rows: &[TaskRow],
    load: &mut Load,
) {
    let cases = std::mem::take(&mut load.cases);
    for c in &cases {
        read_back_runs(peers, c, load).await;
        let Some(row) = rows.iter().find(|r| r.id().as_str() == c.task) else {
            load.lost(Loss::Submit, format!("{}: no row for {}", c.name, c.task));
            continue;
        };
        let last = c.expected().last().copied().unwrap_or_default();
        let settled =
            row.remote.status.as_str() == last && row.outbox.status == NotifyStatus::Delivered;
        if !settled {
            let what = format!(
                "{}: row {} / {:?}",
                c.name,
                row.remote.status.as_str(),
                row.outbox
            );
            load.lost(Loss::Delivery, what);
        }
        if c.kind == Kind::Answered {
            let d = detail(&workers[0], c).await.unwrap_or_default();
            // "unconfirmed": sent under a claim the failover ended, never sent again; the task's
            // `completed` (checked above) shows the server had it.
            match d["answer"]["status"].as_str() {
                Some("sent") => {}
                Some("unconfirmed") => load.unconfirmed_answers += 1,
                _ => load.lost(Loss::Answer, format!("{}: answer {}", c.name, d["answer"])),
            }
        }
    }
    let refused = std::mem::take(&mut load.refused);
    for (owner, thread) in &refused {
        let left = listed(&workers[0], *owner, thread).await;
        let runs = peers.notification_runs(thread).await;
        if !left.is_empty() || !runs.is_empty() {
            let what = format!(
                "refused submit on {thread} left tasks {left:?} and {} runs",
                runs.len()
            );
            load.lost(Loss::Duplicate, what);
        }
    }
    for r in rows
        .iter()
        .filter(|r| !cases.iter().any(|c| c.task == r.id().as_str()))
    {
        load.lost(
            Loss::Duplicate,
            format!("row {} accounted for by no case", r.id().as_str()),
        );
    }
    load.cases = cases;
    load.refused = refused;
}
