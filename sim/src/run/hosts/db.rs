//! The `db` host: serves the store over simulated TCP and records every answer it gives.
//!
//! A `LoseReplies` fault makes it do the work (the transaction commits) and then drop the
//! reply: the caller cannot tell a lost request from a lost reply.

use super::lost_replies::lose_reply;
use crate::check::coverage::confirmed_runs::ConfirmedRuns;
use crate::check::coverage::spent_budget::SpentBudgets;
use crate::history::write_action::WriteAction;
use crate::history::{Grant, RowWrite, Seen};
use crate::plan::fault::{FaultKind, Service};
use crate::plan::naming::task_number;
use crate::plan::QuirkKind;
use crate::plan::WorkloadMark;
use crate::run::backend::Backend;
use crate::run::ctx::{now_ms, timestamp, Ctx};
use crate::wire::db::{Envelope, StoreRequest, StoreResponse};
use crate::wire::rpc::{serve, Reply};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use tasklatch_core::ids::WorkerId;
use tasklatch_core::lease::LeaseKind;
use tasklatch_core::store::{
    CancelOutcome, Claimed, PollWrite, Scope, StoreError, SubmitSettled, SubmitSettlement,
    WriteOutcome,
};
use tasklatch_core::task::TaskRow;
use tasklatch_core::time::Timestamp;

/// The `db` host's software.
pub async fn host(ctx: Arc<Ctx>, backend: Backend) -> turmoil::Result {
    let replies = Arc::new(AtomicU64::new(0));
    let verdicts = Arc::new(Mutex::new(BTreeMap::new()));
    let seen = Arc::new(Mutex::new(WritesSeen::default()));
    serve(move |env: Envelope<StoreRequest>| {
        let ctx = ctx.clone();
        let backend = backend.clone();
        let replies = replies.clone();
        let verdicts = verdicts.clone();
        let seen = seen.clone();
        async move {
            let refusal = down(&ctx, &env.body).or_else(|| refused(&ctx, &verdicts, &env.body));
            let answer = match (&env.body, refusal) {
                (_, Some(refusal)) => refusal,
                (StoreRequest::Time, None) => world_time(),
                (_, None) => backend.store(env.body.clone()).await,
            };
            let tracked = tracked_version(&backend, &env.body, &answer).await;
            let dropped = lose_reply(&ctx, Service::Db, &replies);
            record(&ctx, &env, &answer, dropped, &seen, tracked);
            if dropped {
                Reply::Drop
            } else {
                Reply::Send(answer)
            }
        }
    })
    .await
}

/// What the coverage trackers remember of the writes the store accepted.
#[derive(Default)]
struct WritesSeen {
    spent: SpentBudgets,
    confirmed: ConfirmedRuns,
    /// The tasks whose handle write was recorded (a retried write answers `Recorded` again).
    tracked: BTreeSet<String>,
}

/// An unavailable answer to any call while a store-down fault is active (a failover).
fn down(ctx: &Ctx, req: &StoreRequest) -> Option<StoreResponse> {
    let (index, ()) = ctx
        .active(now_ms(), |k| {
            matches!(k, FaultKind::StoreDown).then_some(())
        })
        .next()?;
    ctx.fire(index, "db");
    if matches!(
        req,
        StoreRequest::SettleSubmit(_, SubmitSettlement::Started(_), _)
    ) {
        ctx.exercised(WorkloadMark::HandleWriteMetStoreDown, "db", None);
    }
    Some(req.failed(StoreError::Unavailable(
        "the database is unreachable (failover)".into(),
    )))
}

/// The event version a submit's row holds right after its handle write `req` answered
/// `Recorded` — the version its first report opened, or none when a cancel request came first
/// — read back from the store; `None` for any other call or answer.
async fn tracked_version(
    backend: &Backend,
    req: &StoreRequest,
    answer: &StoreResponse,
) -> Option<u64> {
    let (
        StoreRequest::SettleSubmit(task, SubmitSettlement::Started(row), _),
        StoreResponse::Settled(Ok(SubmitSettled::Recorded)),
    ) = (req, answer)
    else {
        return None;
    };
    let scope = Scope {
        owner: row.identity.owner.clone(),
        thread: row.identity.thread.clone(),
    };
    match backend.store(StoreRequest::Get(scope, task.clone())).await {
        StoreResponse::Row(Ok(Some(row))) => Some(row.outbox.event_version),
        _ => None,
    }
}

/// Whether each task's row is refused, decided at its first insert.
type Verdicts = Mutex<BTreeMap<String, bool>>;

/// An insert of a row the database refuses: refused, nothing stored. A row's fate is decided
/// at its first insert (a refuse-inserts fault active then refuses it) and holds for every later
/// insert of the same row, as a constraint would. Not a row whose handle the remote host may
/// hand out twice (an owner with a duplicate-handle quirk in the plan): a database would answer
/// that one with its unique index first.
fn refused(ctx: &Ctx, verdicts: &Verdicts, req: &StoreRequest) -> Option<StoreResponse> {
    let StoreRequest::SettleSubmit(_, SubmitSettlement::Started(row), _) = req else {
        return None;
    };
    let id = row.id().as_str().to_owned();
    let decided = verdicts
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&id)
        .copied();
    let refuse = match decided {
        Some(refuse) => refuse,
        None => {
            let refuse = refusing(ctx, row).is_some();
            verdicts
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(id, refuse);
            refuse
        }
    };
    refuse.then(|| {
        req.failed(StoreError::Invalid(
            "the database refused the row (constraint violation)".into(),
        ))
    })
}

/// `Some` when a refuse-inserts fault refuses `row` at its first insert, now.
fn refusing(ctx: &Ctx, row: &TaskRow) -> Option<()> {
    let n = ctx
        .history
        .label_of(row.id().as_str())
        .and_then(|label| task_number(&label))
        .and_then(|n| u32::try_from(n).ok())?;
    let owner = ctx.plan.task(n)?.owner;
    let shared_handles = ctx.plan.tasks.iter().any(|t| {
        t.owner == owner
            && t.quirk
                .as_ref()
                .is_some_and(|q| q.kind == QuirkKind::DuplicateHandle)
    });
    if shared_handles {
        return None;
    }
    let (index, ()) = ctx
        .active(now_ms(), |k| {
            matches!(k, FaultKind::RefuseInserts).then_some(())
        })
        .next()?;
    ctx.fire(index, "db");
    Some(())
}

/// The store's clock: the world's simulated time, unskewed, whichever backend keeps the rows
/// (Postgres's own clock is never read, so a seed replays the same on any day).
fn world_time() -> StoreResponse {
    let elapsed = turmoil::sim_elapsed().unwrap_or_default();
    StoreResponse::Time(Ok(Some(timestamp(elapsed, 0))))
}

type Row<'a> = (&'a str, u64, Option<u64>, Timestamp, WriteAction);

fn rows<'a>(writes: impl Iterator<Item = Row<'a>>, outcomes: &[WriteOutcome]) -> Vec<RowWrite> {
    writes
        .zip(outcomes)
        .map(
            |((task_id, token, version, at, action), outcome)| RowWrite {
                task_id: task_id.to_owned(),
                token,
                version,
                at_us: at.as_micros(),
                action,
                outcome: outcome
                    .as_ref()
                    .map(|w| (w.event_version, w.notified_version, w.notify_status))
                    .map_err(|r| *r),
            },
        )
        .collect()
}

fn record(
    ctx: &Ctx,
    env: &Envelope<StoreRequest>,
    answer: &StoreResponse,
    dropped: bool,
    seen: &Mutex<WritesSeen>,
    tracked: Option<u64>,
) {
    let h = &ctx.history;
    if let StoreResponse::Outcomes(Ok(o)) = answer {
        if let Some((lease, rows)) = written(&env.body, o) {
            record_writes(ctx, lease, rows, dropped, seen);
            return;
        }
    }
    match (&env.body, answer) {
        (
            StoreRequest::ApplyPollsAndClaim(w, _, hand_off),
            StoreResponse::OutcomesAndClaimed(Ok((o, claimed))),
        ) => {
            record_writes(ctx, LeaseKind::Poll, poll_rows(w, o), dropped, seen);
            if !claimed.is_empty() {
                ctx.exercised(WorkloadMark::NotificationClaimedByPoll, "db", None);
            }
            record_claim(ctx, LeaseKind::Notify, &hand_off.worker, claimed, dropped);
        }
        (
            StoreRequest::SettleSubmit(task, SubmitSettlement::Started(_), _),
            StoreResponse::Settled(r),
        ) => handle_written(ctx, task.as_str(), r, tracked, dropped, seen),
        (StoreRequest::Claim(kind, req), StoreResponse::Claimed(Ok(claimed))) => {
            record_claim(ctx, *kind, &req.worker, claimed, dropped)
        }
        (StoreRequest::RequestCancel(scope, _, _), StoreResponse::Cancel(Ok(outcome))) => {
            cancel_requested(ctx, scope, outcome, dropped)
        }
        (StoreRequest::RequeueDeadLetter(id, _), StoreResponse::Requeue(Ok(outcome))) => {
            let event = Seen::StoreRequeue {
                task_id: id.to_string(),
                outcome: outcome.clone(),
                dropped,
            };
            h.record_about("db", id.as_str(), event);
        }
        (body, _) if guarded(body) => {
            if let Some(error) = store_error(answer) {
                let op = format!("{:?}", std::mem::discriminant(body));
                h.record("db", None, Seen::StoreError { op, error });
            }
        }
        _ => {}
    }
}

/// A submit's handle write as the store answered it, recorded as the row's insert: the moment
/// the started task became tracked (its first event version), or the store's refusal. A
/// retried write that finds the handle recorded already is not recorded again; an intent that
/// no longer waited (ended as untracked, or withdrawn) records nothing.
fn handle_written(
    ctx: &Ctx,
    task: &str,
    answer: &Result<SubmitSettled, StoreError>,
    tracked: Option<u64>,
    dropped: bool,
    seen: &Mutex<WritesSeen>,
) {
    let outcome = match (answer, tracked) {
        (Ok(SubmitSettled::Recorded), Some(version)) => {
            let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
            if !seen.tracked.insert(task.to_owned()) {
                return;
            }
            Ok(version)
        }
        (Err(e), _) => Err(e.to_string()),
        _ => return,
    };
    let event = Seen::StoreInsert {
        task_id: task.to_owned(),
        outcome,
        dropped,
    };
    ctx.history.record_about("db", task, event);
}

/// The rows of a guarded batch write as the store answered them, and what they exercised.
fn record_writes(
    ctx: &Ctx,
    lease: LeaseKind,
    rows: Vec<RowWrite>,
    dropped: bool,
    seen: &Mutex<WritesSeen>,
) {
    let h = &ctx.history;
    let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
    for r in rows.iter() {
        if r.outcome.is_ok() && r.action == WriteAction::CancelBudgetExhausted {
            ctx.exercised(WorkloadMark::CancelDeadLetter, "db", h.label_of(&r.task_id));
        }
        if seen.spent.observe(r) {
            ctx.exercised(
                WorkloadMark::BudgetSpentNewerState,
                "db",
                h.label_of(&r.task_id),
            );
        }
        if lease == LeaseKind::Notify && seen.confirmed.observe(r) {
            ctx.exercised(
                WorkloadMark::RunConfirmedInClaim,
                "db",
                h.label_of(&r.task_id),
            );
        }
    }
    drop(seen);
    h.record(
        "db",
        None,
        Seen::StoreWrite {
            lease,
            rows,
            dropped,
        },
    );
}

/// The leases a claim (or a poll write's hand-off) granted, if it granted any.
fn record_claim(ctx: &Ctx, kind: LeaseKind, worker: &WorkerId, claimed: &[Claimed], dropped: bool) {
    if claimed.is_empty() {
        return;
    }
    let grants = claimed
        .iter()
        .map(|c| Grant {
            task_id: c.row.id().to_string(),
            token: c.lease.token.0,
            expires_us: c.lease.expires_at.as_micros(),
        })
        .collect();
    let event = Seen::StoreClaim {
        lease: kind,
        worker: worker.to_string(),
        grants,
        dropped,
    };
    ctx.history.record("db", None, event);
}

/// Whether `req` is a lease-guarded call or a claim (whose failures are recorded).
fn guarded(req: &StoreRequest) -> bool {
    matches!(
        req,
        StoreRequest::Claim(..)
            | StoreRequest::ApplyPolls(..)
            | StoreRequest::ApplyPollsAndClaim(..)
            | StoreRequest::FinishNotifications(..)
            | StoreRequest::FinishCancels(..)
            | StoreRequest::Release(..)
            | StoreRequest::RequestCancel(..)
            | StoreRequest::FinishAnswers(..)
            | StoreRequest::RecordAnswer(..)
    )
}

/// The rows of a batched guarded write as the store answered them, with the lease they were
/// written under; `None` for any other call.
fn written(req: &StoreRequest, o: &[WriteOutcome]) -> Option<(LeaseKind, Vec<RowWrite>)> {
    Some(match req {
        StoreRequest::ApplyPolls(w, _) => (LeaseKind::Poll, poll_rows(w, o)),
        StoreRequest::FinishNotifications(w, now) => {
            let w = w.iter().map(|w| {
                let action = WriteAction::from(&w.action);
                let version = Some(w.dispatch_version);
                (w.task_id.as_str(), w.lease.token.0, version, *now, action)
            });
            (LeaseKind::Notify, rows(w, o))
        }
        StoreRequest::FinishCancels(w, now) => {
            let w = w.iter().map(|w| {
                let action = WriteAction::from(&w.action);
                (w.task_id.as_str(), w.lease.token.0, None, *now, action)
            });
            (LeaseKind::Cancel, rows(w, o))
        }
        StoreRequest::FinishAnswers(w, now) => {
            let w = w.iter().map(|w| {
                let action = WriteAction::from(&w.action);
                (w.task_id.as_str(), w.lease.token.0, None, *now, action)
            });
            (LeaseKind::Poll, rows(w, o))
        }
        StoreRequest::Release(kind, r, now) => {
            let r = r.iter().map(|r| {
                (
                    r.task_id.as_str(),
                    r.lease.token.0,
                    None,
                    *now,
                    WriteAction::Release,
                )
            });
            (*kind, rows(r, o))
        }
        _ => return None,
    })
}

/// The rows of a batch of poll results as the store answered them.
fn poll_rows(writes: &[PollWrite], o: &[WriteOutcome]) -> Vec<RowWrite> {
    let w = writes.iter().map(|w| {
        let token = w.lease.token.0;
        (
            w.task_id.as_str(),
            token,
            None,
            w.completed_at,
            WriteAction::ApplyPoll,
        )
    });
    rows(w, o)
}

/// A cancel request the store recorded, about the task it found (if it found one).
fn cancel_requested(ctx: &Ctx, scope: &Scope, outcome: &CancelOutcome, dropped: bool) {
    let id = match outcome {
        CancelOutcome::Requested(id)
        | CancelOutcome::AlreadyRequested(id)
        | CancelOutcome::AlreadyFinished(id) => Some(id.to_string()),
        _ => None,
    };
    let event = Seen::StoreCancel {
        owner: scope.owner.to_string(),
        thread: scope.thread.to_string(),
        outcome: outcome.clone(),
        dropped,
    };
    match id {
        Some(id) => ctx.history.record_about("db", &id, event),
        None => ctx.history.record("db", None, event),
    }
}

fn store_error(answer: &StoreResponse) -> Option<String> {
    match answer {
        StoreResponse::Claimed(Err(e))
        | StoreResponse::Outcomes(Err(e))
        | StoreResponse::OutcomesAndClaimed(Err(e))
        | StoreResponse::Cancel(Err(e))
        | StoreResponse::Answer(Err(e)) => Some(e.to_string()),
        _ => None,
    }
}
