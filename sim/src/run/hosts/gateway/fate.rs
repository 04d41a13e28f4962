//! How a run the gateway started ends: the plan's faults active at its start decide how long
//! it takes and how it ends (doomed versions, stubborn, stuck, slow, bad and lost runs;
//! otherwise a short successful run), and the end is applied when it is due.

use super::runs::{lock, now_ts, record_end, GatewayState};
use crate::history::parse_key;
use crate::plan::fault::{BadEnd, FaultKind};
use crate::plan::naming::task_number;
use crate::run::backend::Backend;
use crate::run::ctx::Ctx;
use crate::run::ledger_call::{LedgerAnswer, LedgerCall};
use rand::Rng;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tasklatch_core::ids::RunId;
use tasklatch_core::ports::RunStatus;

/// How long a stuck run lasts unless interrupted: until the agent server's own run timeout
/// ends it (as `timeout`), long after the engine's `max_run_life`. A run the engine never
/// learned of (every launch answer for its key was lost) frees its thread only then.
const STUCK_RUN_MS: u64 = 240_000;

/// Ends a new run after its duration, as the plan's faults at its start say: in the ledger of
/// `backend`, or (`None`, langgraph mode) in the simulated server, where a queued run first
/// waits for its turn and a run rolled back or deleted meanwhile ends unrecorded.
pub(super) fn schedule_end(
    ctx: Arc<Ctx>,
    backend: Option<Backend>,
    state: Arc<Mutex<GatewayState>>,
    run: RunId,
    key: String,
    t: u64,
) {
    let (run_ms, end) = match doomed(&ctx, &state, &key, t) {
        Some(run_ms) => (run_ms, RunStatus::Error),
        None => run_fate(&ctx, &state, &run, t),
    };
    tokio::task::spawn_local(async move {
        if backend.is_none() {
            wait_turn(&state, &run).await;
        }
        tokio::time::sleep(Duration::from_millis(run_ms)).await;
        let ledger_end = if end == RunStatus::Missing {
            RunStatus::Interrupted
        } else {
            end
        };
        let ended = match &backend {
            // An interrupted run already ended; a failed finish is still this run's end.
            Some(backend) => !matches!(
                backend
                    .ledger(LedgerCall::Finish(run.clone(), ledger_end, now_ts()))
                    .await,
                LedgerAnswer::Done(Ok(false))
            ),
            None => lock(&state).server.finish(&run, ledger_end),
        };
        lock(&state).scheduled.remove(&run);
        if !ended {
            return;
        }
        record_end(&ctx, &run, &key, end);
    });
}

/// Langgraph mode: waits until no older run of `run`'s thread is active, then starts it (a
/// queued run).
async fn wait_turn(state: &Mutex<GatewayState>, run: &RunId) {
    loop {
        let blocked = {
            let st = lock(state);
            match st.server.find(run) {
                Some(me) if me.status == RunStatus::Pending => st.server.blocked(me),
                _ => false,
            }
        };
        if !blocked {
            lock(state).server.start(run);
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `Some(run_ms)` when a doomed-version fault active at `t` dooms the run of `key`: the
/// fault dooms the first version of its task it sees, and every run of that version fails
/// after `run_ms` while the fault lasts.
fn doomed(ctx: &Ctx, state: &Mutex<GatewayState>, key: &str, t: u64) -> Option<u64> {
    let (task_id, version, _) = parse_key(key)?;
    let n = ctx
        .history
        .label_of(task_id)
        .and_then(|label| task_number(&label))?;
    let faults = ctx.active(t, |k| match k {
        FaultKind::DoomedVersion { task, run_ms } if u64::from(*task) == n => Some(*run_ms),
        _ => None,
    });
    let faults: Vec<_> = faults.collect();
    let mut st = lock(state);
    for (index, run_ms) in faults {
        let doomed = st
            .doomed
            .entry(index)
            .or_insert_with(|| (task_id.to_owned(), version));
        if *doomed == (task_id.to_owned(), version) {
            ctx.fire(index, "gateway");
            return Some(run_ms);
        }
    }
    None
}

/// `Some(run_ms)` when a stubborn-runs fault active at `t` makes `run` ignore interrupts and
/// succeed after `run_ms`; the run is remembered as such.
fn stubborn(ctx: &Ctx, state: &Mutex<GatewayState>, run: &RunId, t: u64) -> Option<u64> {
    let (index, run_ms) = ctx
        .active(t, |k| match k {
            FaultKind::StubbornRuns { run_ms } => Some(*run_ms),
            _ => None,
        })
        .next()?;
    ctx.fire(index, "gateway");
    lock(state).stubborn.insert(run.clone());
    Some(run_ms)
}

/// How long a run started at `t` takes and how it ends: slow and bad-run faults active at
/// its start decide, and a lost-runs fault makes the gateway forget it (it reads "missing").
fn run_fate(ctx: &Ctx, state: &Mutex<GatewayState>, run: &RunId, t: u64) -> (u64, RunStatus) {
    let slow = ctx.active(t, |k| match k {
        FaultKind::SlowRuns { run_ms } => Some(*run_ms),
        _ => None,
    });
    let slow: Vec<_> = slow.collect();
    let bad = ctx.active(t, |k| match k {
        FaultKind::BadRuns { end } => Some(*end),
        _ => None,
    });
    let bad: Vec<_> = bad.collect();
    let stuck = ctx
        .active(t, |k| matches!(k, FaultKind::StuckRuns).then_some(()))
        .next();
    if stuck.is_none() {
        if let Some(run_ms) = stubborn(ctx, state, run, t) {
            return (run_ms, RunStatus::Success);
        }
    }
    // A stuck run is never also forgotten: a run the gateway denies while it holds its thread
    // forever would leave the engine nothing to interrupt.
    let lost = ctx
        .active(t, |k| matches!(k, FaultKind::LostRuns).then_some(()))
        .next()
        .filter(|_| stuck.is_none());
    let run_ms = match (stuck, slow.first()) {
        (Some((index, ())), _) => {
            ctx.fire(index, "gateway");
            STUCK_RUN_MS
        }
        (None, Some((index, ms))) => {
            ctx.fire(*index, "gateway");
            *ms
        }
        (None, None) => lock(state).rng.random_range(500..3_000),
    };
    let end = match (lost, bad.first()) {
        _ if stuck.is_some() => RunStatus::Timeout,
        (Some((index, ())), _) => {
            ctx.fire(index, "gateway");
            lock(state).lost.insert(run.clone());
            RunStatus::Missing
        }
        (None, Some((index, end))) => {
            ctx.fire(*index, "gateway");
            match end {
                BadEnd::Error => RunStatus::Error,
                BadEnd::Timeout => RunStatus::Timeout,
                BadEnd::Interrupted => RunStatus::Interrupted,
            }
        }
        (None, None) => RunStatus::Success,
    };
    (run_ms, end)
}
