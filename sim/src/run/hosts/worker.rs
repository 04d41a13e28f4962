//! A `worker-N` host: engine lanes running passes of the three loops, forever.
//!
//! All lanes of a worker record the same lease owner (`worker-N`), so only the per-claim
//! fencing token tells a stalled lane's stale write from its sibling's fresh claim.
//!
//! A graceful stop of the plan is the worker's own shutdown (SIGTERM): at its start every
//! lane's engine is told to begin shutting down, mid-pass if need be (nothing new is started,
//! rows claimed but not acted on are released), the lane ends its pass and stays down until
//! the stop's window ends, then starts afresh — as the worker process would after a restart.

use crate::history::Seen;
use crate::plan::fault::FaultKind;
use crate::plan::naming::{lane_name, worker_host};
use crate::plan::timing::PASS_INTERVAL;
use crate::run::ctx::{now_ms, Ctx};
use crate::run::hosts::retention::retention_loop;
use crate::run::ports::{engine, Caller};
use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use tasklatch_core::ids::WorkerId;

/// The software of worker `worker`: its lanes, built afresh at every (re)start.
pub async fn host(ctx: Arc<Ctx>, worker: u32) -> turmoil::Result {
    ctx.history
        .record(&worker_host(worker), None, Seen::HostStarted);
    let lanes: Vec<_> = (0..ctx.plan.lanes)
        .map(|lane| tokio::task::spawn_local(lane_loop(ctx.clone(), worker, lane)))
        .collect();
    if worker == 0 && ctx.plan.retention {
        tokio::task::spawn_local(retention_loop(ctx.clone(), worker));
    }
    for lane in lanes {
        let _ = lane.await;
    }
    Ok(())
}

/// The next graceful stop of `worker` starting at or after `t_ms`: (fault index, start, end).
fn next_stop(ctx: &Ctx, worker: u32, t_ms: u64) -> Option<(usize, u64, u64)> {
    ctx.faults()
        .iter()
        .enumerate()
        .filter(|(_, f)| matches!(f.kind, FaultKind::GracefulStop { worker: w } if w == worker))
        .filter(|(_, f)| f.at_ms >= t_ms && ctx.in_chaos(f.at_ms))
        .map(|(i, f)| (i, f.at_ms, f.at_ms + f.for_ms))
        .min_by_key(|(_, at, _)| *at)
}

async fn lane_loop(ctx: Arc<Ctx>, worker: u32, lane: u32) {
    let caller = Caller {
        name: lane_name(worker, lane),
        ctx: ctx.clone(),
        lane: Some((worker, lane)),
    };
    tokio::time::sleep(Duration::from_millis(u64::from(lane) * 500)).await;
    loop {
        let engine = Rc::new(engine(
            caller.clone(),
            Some(worker),
            WorkerId(worker_host(worker)),
        ));
        let stop = next_stop(&ctx, worker, now_ms());
        let stopping = Rc::new(Cell::new(false));
        if let Some((index, at_ms, _)) = stop {
            let (engine, stopping, ctx) = (engine.clone(), stopping.clone(), ctx.clone());
            let host = worker_host(worker);
            tokio::task::spawn_local(async move {
                tokio::time::sleep(Duration::from_millis(at_ms.saturating_sub(now_ms()))).await;
                ctx.fire(index, &host);
                engine.begin_shutdown();
                stopping.set(true);
            });
        }
        loop {
            engine.run_once().await;
            if stopping.get() {
                break;
            }
            tokio::time::sleep(PASS_INTERVAL).await;
        }
        let Some((_, _, end_ms)) = stop else {
            return;
        };
        tokio::time::sleep(Duration::from_millis(end_ms.saturating_sub(now_ms()))).await;
        if lane == 0 {
            ctx.history
                .record(&worker_host(worker), None, Seen::HostStarted);
        }
    }
}
