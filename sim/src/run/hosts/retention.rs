//! Worker 0's retention: every [`RETENTION_EVERY`] it asks the store to delete what
//! [`tasklatch_core::store::Store::prune_finished`] allows — finished, settled rows older than
//! [`RETENTION_AFTER`], dead letters older than [`DEAD_LETTERS_AFTER`] — through the worker's
//! own store port and skewed clock. One statement of at most `MAX_BATCH` rows per pass: the
//! worker crate's `[retention]` loop, which the simulation does not run yet, batches further.

use crate::plan::naming::worker_host;
use crate::plan::timing::{DEAD_LETTERS_AFTER, RETENTION_AFTER, RETENTION_EVERY};
use crate::run::ctx::Ctx;
use crate::run::ports::{Caller, RpcStore, SimClock};
use std::sync::Arc;
use tasklatch_core::policy::MAX_BATCH;
use tasklatch_core::ports::Clock;
use tasklatch_core::store::{PruneRequest, Store};

/// Runs retention passes for worker `worker` until the host goes down.
pub async fn retention_loop(ctx: Arc<Ctx>, worker: u32) {
    let caller = Caller {
        name: format!("{}/retention", worker_host(worker)),
        ctx: ctx.clone(),
        lane: Some((worker, ctx.plan.lanes)),
    };
    let store = RpcStore { caller };
    let clock = SimClock {
        ctx,
        worker: Some(worker),
    };
    loop {
        tokio::time::sleep(RETENTION_EVERY).await;
        let now = clock.now();
        let req = PruneRequest {
            now,
            finished_before: now.minus(RETENTION_AFTER),
            dead_letters_before: now.minus(DEAD_LETTERS_AFTER),
            limit: MAX_BATCH,
        };
        // A failed pass is tried again at the next one, as the worker's loop does.
        let _ = store.prune_finished(req).await;
    }
}
