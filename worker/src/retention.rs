//! The retention loop: deletes finished tasks whose every notification is settled, with their
//! ended runs, once their remote state is older than the configured age
//! ([`tasklatch_core::store::Store::prune_finished`], whose rule is
//! [`tasklatch_core::transitions::retention::prunable`]: never undelivered work, never a
//! dispatch in flight, a cancel still to do or a held lease).
//!
//! Off by default (`[retention] after_hours = 0`): deleting history is the operator's
//! decision. When on, one task per process runs a pass every `interval_ms`: statements of at
//! most `batch_size` tasks each (one short transaction each, rows held by others skipped),
//! until one deletes fewer than a batch or [`MAX_BATCHES_PER_PASS`] ran. Several processes may
//! run it at once: each statement skips the rows another one holds. The metric
//! `tasklatch_pruned_total{what="tasks"|"runs"}` counts what went; a failed statement is
//! logged, counted in `tasklatch_store_errors_total{op="prune_finished"}` and tried again at
//! the next pass.

use crate::metrics::Metrics;
use std::sync::Arc;
use std::time::Duration;
use tasklatch_core::ports::Clock;
use tasklatch_core::store::{PruneRequest, Pruned, Store, StoreError};
use tasklatch_core::time::Timestamp;
use tokio::sync::watch;

/// Statements per pass, at most: a pass ends even when every statement deletes a full batch.
pub const MAX_BATCHES_PER_PASS: usize = 100;

/// The retention loop's settings (`[retention]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Retention {
    /// Finished, settled tasks go this long after the later of their last remote change and
    /// their notification settling.
    pub after: Duration,
    /// A dead-lettered notification keeps its task this long after it became a dead letter
    /// (unless an operator requeues it first); at least `after`.
    pub dead_letters_after: Duration,
    /// How often a pass runs.
    pub every: Duration,
    /// Tasks per statement, at most `policy::MAX_BATCH`.
    pub batch: usize,
}

/// One pass at `now`: statements of `r.batch` tasks until one deletes fewer, at most
/// [`MAX_BATCHES_PER_PASS`]. Counts what went in `metrics`; the total, or the first error
/// (what went before it stays counted).
pub async fn pass<S: Store>(
    store: &S,
    now: Timestamp,
    r: &Retention,
    metrics: &Metrics,
) -> Result<Pruned, StoreError> {
    let mut total = Pruned::default();
    for _ in 0..MAX_BATCHES_PER_PASS {
        let req = PruneRequest {
            now,
            finished_before: now.minus(r.after),
            dead_letters_before: now.minus(r.dead_letters_after),
            limit: r.batch,
        };
        let pruned = store.prune_finished(req).await?;
        metrics.pruned(pruned);
        total.tasks += pruned.tasks;
        total.runs += pruned.runs;
        if pruned.tasks < r.batch as u64 {
            break;
        }
    }
    Ok(total)
}

/// Runs a pass every `r.every` until `stop` turns true (a pass under way finishes its
/// statement first).
pub async fn run<S: Store, C: Clock>(
    store: S,
    clock: C,
    r: Retention,
    metrics: Arc<Metrics>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            () = tokio::time::sleep(r.every) => {}
        }
        match pass(&store, clock.now(), &r, &metrics).await {
            Ok(p) if p.tasks > 0 => {
                tracing::info!(
                    tasks = p.tasks,
                    runs = p.runs,
                    "retention: finished tasks deleted"
                )
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "retention: a prune failed; next pass retries"),
        }
    }
}
