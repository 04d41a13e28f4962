//! How one history entry reads in words: its kind, its time and a one-line summary of its
//! payload. Everything here returns raw (unescaped) text; callers escape it.
//!
//! Contract: every function accepts any history (hostile text, unknown fault indexes, event
//! kinds added after this module was written) without panicking, and [`summary`] never returns
//! more than [`MAX_SUMMARY_CHARS`] characters.

use crate::history::{Entry, LaunchAnswer, RowWrite, Seen};
use crate::plan::naming::task_label;
use crate::plan::Plan;
use crate::wire::mcp::{McpAnswer, WireReport};
use tasklatch_core::store::{CancelOutcome, RequeueOutcome};

/// Longest summary, in characters.
pub const MAX_SUMMARY_CHARS: usize = 220;
/// Longest excerpt of a hostile text (prompt, result, error) inside a summary.
const MAX_EXCERPT_CHARS: usize = 60;
/// Most rows of a batched store call a summary lists.
const MAX_ROWS: usize = 4;

/// `us` microseconds as seconds with millisecond precision (`12.345`).
pub fn secs(us: u64) -> String {
    format!("{}.{:03}", us / 1_000_000, (us / 1_000) % 1_000)
}

/// The entry's kind as the trace spells it (`launch_served`, `store_write`, …).
pub fn kind(event: &Seen) -> String {
    match serde_json::to_value(event) {
        Ok(v) => v
            .get("kind")
            .and_then(|k| k.as_str())
            .unwrap_or("event")
            .to_owned(),
        Err(_) => "event".to_owned(),
    }
}

/// `#i name` of fault `index` of the plan, or `#i (not in the plan)`.
pub fn fault_label(plan: &Plan, index: usize) -> String {
    match plan.faults.get(index) {
        Some(f) => format!("#{index} {}", f.name()),
        None => format!("#{index} (not in the plan)"),
    }
}

/// One line about `entry`: `12.345 s · #17 worker-1 · port_launch · <summary>`.
pub fn line(plan: &Plan, index: usize, entry: &Entry) -> String {
    format!(
        "{} s · #{index} {} · {} · {}",
        secs(entry.at_us),
        entry.host,
        kind(&entry.event),
        summary(plan, &entry.event, &|_| true)
    )
}

/// A one-line summary of the event's payload. Batched store calls list only the rows whose
/// task id `keep` accepts (all rows when it accepts everything).
pub fn summary(plan: &Plan, event: &Seen, keep: &dyn Fn(&str) -> bool) -> String {
    let s = world(plan, event)
        .or_else(|| user(event))
        .or_else(|| service(event))
        .or_else(|| store(event, keep))
        .unwrap_or_else(|| generic(event));
    s.chars().take(MAX_SUMMARY_CHARS).collect()
}

/// What the world and the hosts themselves did: phases, faults, coverage, restarts.
fn world(plan: &Plan, event: &Seen) -> Option<String> {
    Some(match event {
        Seen::Phase { name } => format!("phase {name}"),
        Seen::FaultFired { index } => format!("fault {} took effect", fault_label(plan, *index)),
        Seen::FaultStarted { index } => format!(
            "fault {} began{}",
            fault_label(plan, *index),
            target(plan, *index)
        ),
        Seen::FaultEnded { index } => format!(
            "fault {} ended{}",
            fault_label(plan, *index),
            target(plan, *index)
        ),
        Seen::Exercised { what } => format!("exercised {what}"),
        Seen::RowRuleBroken { rule } => {
            format!("the engine found row rule {rule} broken (planted bug active)")
        }
        Seen::HostStarted => "host (re)started its software".to_owned(),
        _ => return None,
    })
}

/// What users did and saw.
fn user(event: &Seen) -> Option<String> {
    Some(match event {
        Seen::ThreadCreated { owner, thread } => format!("{owner}: thread {thread} created"),
        Seen::SubmitSent { n, task_id } => format!("submit {} as {task_id}", task_label(*n)),
        Seen::SubmitAnswered { n, answer } => match answer {
            Ok(id) => format!("{} submitted: {id}", task_label(*n)),
            Err(e) => format!("{} submit failed: {}", task_label(*n), excerpt(e)),
        },
        Seen::CancelSent { n, by, session } => {
            format!("cancel {} sent by {by} (session {session})", task_label(*n))
        }
        Seen::CancelAnswered { n, by, answer } => match answer {
            Ok(o) => format!(
                "cancel {} answered to {by}: {}",
                task_label(*n),
                cancel_outcome(o)
            ),
            Err(e) => format!("cancel {} failed for {by}: {}", task_label(*n), excerpt(e)),
        },
        Seen::Listed {
            owner,
            thread,
            answer,
        } => match answer {
            Ok(tasks) => format!("{owner} listed {thread}: {} tasks", tasks.len()),
            Err(e) => format!("{owner} listing {thread} failed: {}", excerpt(e)),
        },
        Seen::ContextRead {
            owner,
            thread,
            answer,
        } => match answer {
            Ok(tasks) => format!(
                "{owner} read the run context of {thread}: {} tasks",
                tasks.len()
            ),
            Err(e) => format!(
                "{owner} reading the run context of {thread} failed: {}",
                excerpt(e)
            ),
        },
        Seen::ThreadDeleted { owner, thread } => format!("{owner} deleted {thread}"),
        Seen::AnswerSent {
            n, by, request_id, ..
        } => format!("answer to {request_id} of {} sent by {by}", task_label(*n)),
        Seen::AnswerAnswered { n, by, answer, .. } => match answer {
            Ok(o) => format!("answer to {} answered to {by}: {o:?}", task_label(*n)),
            Err(e) => format!(
                "answer to {} failed for {by}: {}",
                task_label(*n),
                excerpt(e)
            ),
        },
        _ => return None,
    })
}

/// What the remote server and the launcher served, and what the ports saw of it.
fn service(event: &Seen) -> Option<String> {
    remote(event).or_else(|| launcher(event))
}

/// What the remote server served, and what the ports saw of it.
fn remote(event: &Seen) -> Option<String> {
    Some(match event {
        Seen::RemoteCreated { n, remote_id, .. } => {
            format!("remote task {remote_id} created for {}", task_label(*n))
        }
        Seen::RemoteReused { n, remote_id } => {
            format!(
                "remote task {remote_id} handed again to {}'s submit",
                task_label(*n)
            )
        }
        Seen::RemoteTruth { answer, .. } => {
            format!("at the end the remote task reads {}", mcp_answer(answer))
        }
        Seen::RemoteServed {
            op,
            answer,
            dropped,
            ..
        } => {
            format!(
                "{} → {}{}",
                lower(op),
                mcp_answer(answer),
                dropped_note(*dropped)
            )
        }
        Seen::RemoteAnswered {
            remote_id,
            request_id,
            asked,
            ..
        } => format!(
            "answer to {request_id} of remote task {remote_id} taken{}",
            if *asked {
                ""
            } else {
                " and ignored (not asked)"
            }
        ),
        Seen::PortRemote {
            lane,
            op,
            started_us,
            answered,
            ..
        } => format!(
            "{lane} {} call started {} s: {}",
            lower(op),
            secs(*started_us),
            if *answered { "answered" } else { "no answer" }
        ),
        _ => return None,
    })
}

/// What the launcher served, and what the ports saw of it.
fn launcher(event: &Seen) -> Option<String> {
    Some(match event {
        Seen::LaunchServed {
            key,
            prompt,
            answer,
            created_run,
            dropped,
            ..
        } => format!(
            "launch {key} → {}{}{}; prompt: {}",
            launch_answer(answer),
            created_run
                .as_ref()
                .map(|r| format!(" (created {r})"))
                .unwrap_or_default(),
            dropped_note(*dropped),
            excerpt(prompt)
        ),
        Seen::PortLaunch {
            lane, key, outcome, ..
        } => format!("{lane} launch {key}: {outcome}"),
        Seen::RunEnded { run, key, status } => {
            format!("run {run} ({key}) ended: {}", status.as_str())
        }
        Seen::PortLookup {
            lane, run, outcome, ..
        } => format!("{lane} looked up {run}: {outcome}"),
        Seen::PortInterrupt {
            lane, run, outcome, ..
        } => {
            format!("{lane} interrupted {run} (too old): {outcome}")
        }
        Seen::RunQueued { run, key } => {
            format!("run {run} ({key}) queued behind a busy thread (no 409)")
        }
        Seen::RunRolledBack { run, key } => format!("run {run} ({key}) rolled back"),
        _ => return None,
    })
}

/// What the store answered; batched calls list the rows `keep` accepts.
fn store(event: &Seen, keep: &dyn Fn(&str) -> bool) -> Option<String> {
    if let Some(batch) = batch(event, keep) {
        return Some(batch);
    }
    Some(match event {
        Seen::StoreInsert {
            task_id,
            outcome,
            dropped,
        } => match outcome {
            Ok(v) => format!("insert {task_id}: event v{v}{}", dropped_note(*dropped)),
            Err(e) => format!(
                "insert {task_id} refused: {}{}",
                excerpt(e),
                dropped_note(*dropped)
            ),
        },
        Seen::StoreCancel {
            owner,
            thread,
            outcome,
            dropped,
        } => {
            format!(
                "cancel by {owner} in {thread}: {}{}",
                cancel_outcome(outcome),
                dropped_note(*dropped)
            )
        }
        Seen::StoreError { op, error } => format!("store error in {op}: {}", excerpt(error)),
        Seen::StoreRequeue {
            outcome, dropped, ..
        } => {
            let what = match outcome {
                RequeueOutcome::Requeued(v) => format!("requeued as version {v}"),
                RequeueOutcome::NotDeadLettered => "not dead-lettered, unchanged".into(),
                RequeueOutcome::NothingToDeliver => "nothing to deliver, unchanged".into(),
                RequeueOutcome::NotFound => "no such task".into(),
            };
            format!(
                "operator requeue of a dead letter: {what}{}",
                dropped_note(*dropped)
            )
        }
        _ => return None,
    })
}

/// A batched claim or write of the store, listing the rows `keep` accepts.
fn batch(event: &Seen, keep: &dyn Fn(&str) -> bool) -> Option<String> {
    Some(match event {
        Seen::StoreClaim {
            lease,
            worker,
            grants,
            dropped,
        } => {
            let rows: Vec<String> = grants
                .iter()
                .filter(|g| keep(&g.task_id))
                .map(|g| format!("{} token {}", g.task_id, g.token))
                .collect();
            format!(
                "{} claim by {worker}: {}{}",
                lease.as_str(),
                listed(&rows),
                dropped_note(*dropped)
            )
        }
        Seen::StoreWrite {
            lease,
            rows,
            dropped,
        } => {
            let rows: Vec<String> = rows
                .iter()
                .filter(|r| keep(&r.task_id))
                .map(row_write)
                .collect();
            format!(
                "{} write: {}{}",
                lease.as_str(),
                listed(&rows),
                dropped_note(*dropped)
            )
        }
        _ => return None,
    })
}

/// One row of a batched write: `tsk_… token 3 apply_poll → v2/n1 pending` or `… refused LeaseExpired`.
pub fn row_write(r: &RowWrite) -> String {
    match &r.outcome {
        Ok((event, notified, status)) => {
            format!(
                "{} token {} {} → event v{event}, notified v{notified}, {}",
                r.task_id,
                r.token,
                r.action,
                status.as_str()
            )
        }
        Err(refusal) => format!(
            "{} token {} {} refused: {refusal:?}",
            r.task_id, r.token, r.action
        ),
    }
}

fn target(plan: &Plan, index: usize) -> String {
    plan.faults
        .get(index)
        .map(|f| format!(" ({})", f.kind.detail()))
        .unwrap_or_default()
}

fn listed(rows: &[String]) -> String {
    match rows.len() {
        0 => "no rows".to_owned(),
        n if n <= MAX_ROWS => rows.join("; "),
        n => format!("{}; … {} more", rows[..MAX_ROWS].join("; "), n - MAX_ROWS),
    }
}

fn dropped_note(dropped: bool) -> &'static str {
    if dropped {
        " (reply dropped)"
    } else {
        ""
    }
}

fn excerpt(s: &str) -> String {
    let mut out: String = s.chars().take(MAX_EXCERPT_CHARS).collect();
    if s.chars().nth(MAX_EXCERPT_CHARS).is_some() {
        out.push('…');
    }
    out
}

/// Lower-case Debug spelling of a small enum (`Status` → `status`).
fn lower(v: &impl std::fmt::Debug) -> String {
    format!("{v:?}").to_lowercase()
}

fn cancel_outcome(o: &CancelOutcome) -> String {
    match o {
        CancelOutcome::Requested(id) => format!("requested {id}"),
        CancelOutcome::AlreadyRequested(id) => format!("already requested {id}"),
        CancelOutcome::AlreadyFinished(id) => format!("already finished {id}"),
        CancelOutcome::NotFound => "not found".to_owned(),
        other => lower(other),
    }
}

fn launch_answer(a: &LaunchAnswer) -> String {
    match a {
        LaunchAnswer::Started { run } => format!("started {run}"),
        LaunchAnswer::Busy => "409 busy".to_owned(),
        LaunchAnswer::Gone => "404 gone".to_owned(),
        other => lower(other),
    }
}

/// The remote status a served answer reported, if it reported one.
pub fn served_status(answer: &McpAnswer) -> Option<&str> {
    match answer {
        McpAnswer::Created { report, .. } | McpAnswer::Report(report) => {
            Some(report.status.as_str())
        }
        _ => None,
    }
}

fn mcp_answer(a: &McpAnswer) -> String {
    match a {
        McpAnswer::Created { report, .. } => format!("created, {}", report_text(report)),
        McpAnswer::Report(report) => report_text(report),
        McpAnswer::Unknown => "unknown task".to_owned(),
        McpAnswer::Unavailable(e) => format!("unavailable: {}", excerpt(e)),
        other => excerpt(&format!("{other:?}")),
    }
}

fn report_text(r: &WireReport) -> String {
    let mut s = format!("status {}", r.status);
    let texts = [
        ("result", &r.result),
        ("error", &r.error),
        ("input request", &r.input_request),
    ];
    for (name, t) in texts {
        if let Some(t) = t {
            s.push_str(&format!(", {name}: {}", excerpt(&t.decode())));
        }
    }
    s
}

/// Any other event: its payload as compact JSON.
fn generic(event: &Seen) -> String {
    match serde_json::to_value(event) {
        Ok(v) => match v.get("payload") {
            Some(p) => excerpt(&p.to_string()),
            None => String::new(),
        },
        Err(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_have_millisecond_precision() {
        assert_eq!(secs(12_345_678), "12.345");
        assert_eq!(secs(0), "0.000");
    }

    #[test]
    fn summaries_are_bounded() {
        let plan = crate::plan::generate::generate(1, &crate::plan::generate::Knobs::default());
        let e = Seen::StoreError {
            op: "x".repeat(10_000),
            error: "y".repeat(10_000),
        };
        assert!(summary(&plan, &e, &|_| true).chars().count() <= MAX_SUMMARY_CHARS);
        assert_eq!(kind(&e), "store_error");
        assert_eq!(fault_label(&plan, 10_000), "#10000 (not in the plan)");
    }
}
