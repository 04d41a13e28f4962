//! The `db` host: serves the store over simulated TCP and records every answer it gives.
//!
//! A `LoseReplies` fault makes it do the work (the transaction commits) and then drop the
//! reply: the caller cannot tell a lost request from a lost reply.

use crate::backend::Backend;
use crate::ctx::{now_ms, Ctx};
use crate::fault::{FaultKind, Service};
use crate::history::{Event, Grant, RowWrite};
use crate::wire::db::{Envelope, StoreRequest, StoreResponse};
use crate::wire::rpc::{serve, Reply};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tasklatch_core::lease::LeaseKind;
use tasklatch_core::store::WriteOutcome;
use tasklatch_core::time::Timestamp;
use tasklatch_core::transitions::cancel::CancelAction;
use tasklatch_core::transitions::outbox::NotifyAction;

/// The `db` host's software.
pub async fn host(ctx: Arc<Ctx>, backend: Backend) -> turmoil::Result {
    let replies = Arc::new(AtomicU64::new(0));
    serve(move |env: Envelope<StoreRequest>| {
        let ctx = ctx.clone();
        let backend = backend.clone();
        let replies = replies.clone();
        async move {
            let answer = backend.store(env.body.clone()).await;
            let dropped = lose_reply(&ctx, &replies);
            record(&ctx, &env, &answer, dropped);
            if dropped {
                Reply::Drop
            } else {
                Reply::Send(answer)
            }
        }
    })
    .await
}

/// Whether a `LoseReplies` fault on `service` drops this reply (every `one_in`-th).
pub fn lose_reply_of(ctx: &Ctx, service: Service, counter: &AtomicU64, host: &str) -> bool {
    let Some((index, one_in)) = ctx
        .active(now_ms(), |k| match k {
            FaultKind::LoseReplies { service: s, one_in } if *s == service => Some(*one_in),
            _ => None,
        })
        .next()
    else {
        return false;
    };
    let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
    let drop = n % u64::from(one_in.max(1)) == 0;
    if drop {
        ctx.fire(index, host);
    }
    drop
}

fn lose_reply(ctx: &Ctx, counter: &AtomicU64) -> bool {
    lose_reply_of(ctx, Service::Db, counter, "db")
}

fn notify_action_name(a: &NotifyAction) -> &'static str {
    match a {
        NotifyAction::Launched(_) => "launched",
        NotifyAction::Busy => "busy",
        NotifyAction::ThreadGone => "thread_gone",
        NotifyAction::LaunchFailed(_) => "launch_failed",
        NotifyAction::RunSucceeded => "run_succeeded",
        NotifyAction::RunFailed(_) => "run_failed",
        NotifyAction::RunPending => "run_pending",
        NotifyAction::LookupFailed(_) => "lookup_failed",
        NotifyAction::BudgetExhausted => "budget_exhausted",
    }
}

fn cancel_action_name(a: &CancelAction) -> &'static str {
    match a {
        CancelAction::Finished(_) => "cancel_finished",
        CancelAction::Failed(_) => "cancel_failed",
        CancelAction::BudgetExhausted => "cancel_budget_exhausted",
    }
}

type Row<'a> = (&'a str, u64, Option<u64>, Timestamp, &'static str);

fn rows<'a>(writes: impl Iterator<Item = Row<'a>>, outcomes: &[WriteOutcome]) -> Vec<RowWrite> {
    writes
        .zip(outcomes)
        .map(
            |((task_id, token, version, at, action), outcome)| RowWrite {
                task_id: task_id.to_owned(),
                token,
                version,
                at_us: at.as_micros(),
                action: action.to_owned(),
                outcome: outcome
                    .as_ref()
                    .map(|w| (w.event_version, w.notified_version, w.notify_status))
                    .map_err(|r| *r),
            },
        )
        .collect()
}

fn record(ctx: &Ctx, env: &Envelope<StoreRequest>, answer: &StoreResponse, dropped: bool) {
    let h = &ctx.history;
    let about = |id: &str, event: Event| h.record_about("db", id, event);
    match (&env.body, answer) {
        (StoreRequest::Insert(row), StoreResponse::Unit(r)) => about(
            row.id().as_str(),
            Event::StoreInsert {
                task_id: row.id().to_string(),
                outcome: r
                    .clone()
                    .map(|()| row.outbox.event_version)
                    .map_err(|e| e.to_string()),
                dropped,
            },
        ),
        (StoreRequest::Claim(kind, req), StoreResponse::Claimed(Ok(claimed)))
            if !claimed.is_empty() =>
        {
            let grants = claimed
                .iter()
                .map(|c| Grant {
                    task_id: c.row.id().to_string(),
                    token: c.lease.token.0,
                    expires_us: c.lease.expires_at.as_micros(),
                })
                .collect();
            h.record(
                "db",
                None,
                Event::StoreClaim {
                    lease: *kind,
                    worker: req.worker.to_string(),
                    grants,
                    dropped,
                },
            );
        }
        (StoreRequest::ApplyPolls(w, _), StoreResponse::Outcomes(Ok(o))) => {
            let rows = rows(
                w.iter().map(|w| {
                    (
                        w.task_id.as_str(),
                        w.lease.token.0,
                        None,
                        w.completed_at,
                        "apply_poll",
                    )
                }),
                o,
            );
            h.record(
                "db",
                None,
                Event::StoreWrite {
                    lease: LeaseKind::Poll,
                    rows,
                    dropped,
                },
            );
        }
        (StoreRequest::FinishNotifications(w, now), StoreResponse::Outcomes(Ok(o))) => {
            let rows = rows(
                w.iter().map(|w| {
                    (
                        w.task_id.as_str(),
                        w.lease.token.0,
                        Some(w.dispatch_version),
                        *now,
                        notify_action_name(&w.action),
                    )
                }),
                o,
            );
            h.record(
                "db",
                None,
                Event::StoreWrite {
                    lease: LeaseKind::Notify,
                    rows,
                    dropped,
                },
            );
        }
        (StoreRequest::FinishCancels(w, now), StoreResponse::Outcomes(Ok(o))) => {
            let rows = rows(
                w.iter().map(|w| {
                    (
                        w.task_id.as_str(),
                        w.lease.token.0,
                        None,
                        *now,
                        cancel_action_name(&w.action),
                    )
                }),
                o,
            );
            h.record(
                "db",
                None,
                Event::StoreWrite {
                    lease: LeaseKind::Cancel,
                    rows,
                    dropped,
                },
            );
        }
        (StoreRequest::Release(kind, r, now), StoreResponse::Outcomes(Ok(o))) => {
            let rows = rows(
                r.iter()
                    .map(|r| (r.task_id.as_str(), r.lease.token.0, None, *now, "release")),
                o,
            );
            h.record(
                "db",
                None,
                Event::StoreWrite {
                    lease: *kind,
                    rows,
                    dropped,
                },
            );
        }
        (StoreRequest::RequestCancel(scope, _, _), StoreResponse::Cancel(Ok(outcome))) => {
            let id = match outcome {
                tasklatch_core::store::CancelOutcome::Requested(id)
                | tasklatch_core::store::CancelOutcome::AlreadyRequested(id)
                | tasklatch_core::store::CancelOutcome::AlreadyFinished(id) => Some(id.to_string()),
                _ => None,
            };
            let event = Event::StoreCancel {
                owner: scope.owner.to_string(),
                thread: scope.thread.to_string(),
                outcome: outcome.clone(),
                dropped,
            };
            match id {
                Some(id) => about(&id, event),
                None => h.record("db", None, event),
            }
        }
        (
            StoreRequest::Claim(..)
            | StoreRequest::ApplyPolls(..)
            | StoreRequest::FinishNotifications(..)
            | StoreRequest::FinishCancels(..)
            | StoreRequest::Release(..)
            | StoreRequest::RequestCancel(..),
            _,
        ) => {
            if let Some(error) = store_error(answer) {
                h.record(
                    "db",
                    None,
                    Event::StoreError {
                        op: format!("{:?}", std::mem::discriminant(&env.body)),
                        error,
                    },
                );
            }
        }
        _ => {}
    }
}

fn store_error(answer: &StoreResponse) -> Option<String> {
    match answer {
        StoreResponse::Claimed(Err(e))
        | StoreResponse::Outcomes(Err(e))
        | StoreResponse::Cancel(Err(e)) => Some(e.to_string()),
        _ => None,
    }
}
