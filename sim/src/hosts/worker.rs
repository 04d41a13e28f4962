//! A `worker-N` host: engine lanes running passes of the three loops, forever.
//!
//! All lanes of a worker record the same lease owner (`worker-N`), so only the per-claim
//! fencing token tells a stalled lane's stale write from its sibling's fresh claim.

use crate::ctx::Ctx;
use crate::history::Event;
use crate::naming::{lane_name, worker_host};
use crate::ports::{engine, Caller};
use crate::timing::PASS_INTERVAL;
use std::sync::Arc;
use std::time::Duration;
use tasklatch_core::ids::WorkerId;

/// The software of worker `worker`: its lanes, built afresh at every (re)start.
pub async fn host(ctx: Arc<Ctx>, worker: u32) -> turmoil::Result {
    ctx.history
        .record(&worker_host(worker), None, Event::HostStarted);
    let lanes: Vec<_> = (0..ctx.plan.lanes)
        .map(|lane| tokio::task::spawn_local(lane_loop(ctx.clone(), worker, lane)))
        .collect();
    for lane in lanes {
        let _ = lane.await;
    }
    Ok(())
}

async fn lane_loop(ctx: Arc<Ctx>, worker: u32, lane: u32) {
    let caller = Caller {
        name: lane_name(worker, lane),
        ctx: ctx.clone(),
        lane: Some((worker, lane)),
    };
    let engine = engine(caller, Some(worker), WorkerId(worker_host(worker)));
    tokio::time::sleep(Duration::from_millis(u64::from(lane) * 500)).await;
    loop {
        engine.run_once().await;
        tokio::time::sleep(PASS_INTERVAL).await;
    }
}
