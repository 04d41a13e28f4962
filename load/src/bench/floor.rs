//! Part 2, the SQL floor, same database, same batch size: the end-to-end rows made pending
//! again, then W workers do nothing but the notification claim and the completing write.

use super::server::settled_counts;
use super::{claim_req, succeeded, BenchConfig, BenchError, BenchReport, PhaseWrites, Rig};
use crate::clock::ScaledClock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tasklatch_core::lease::LeaseKind;
use tasklatch_core::ports::Clock;
use tasklatch_core::store::Store;
use tasklatch_pg::PgStore;

/// Every end-to-end row gets a new version to deliver, due at `$1`.
const MAKE_PENDING_AGAIN: &str = "UPDATE tasks SET event_version = event_version + 1, \
     notify_status = 'pending', notify_due_at = $1, dispatch_event = NULL, run_id = NULL \
     WHERE id LIKE 'e2e-%'";

/// Runs part 2 and fills its fields of `report`.
pub(super) async fn run(
    rig: &Rig,
    config: &BenchConfig,
    report: &mut BenchReport,
    progress: &mut (impl FnMut(&str) + Send),
) -> Result<(), BenchError> {
    sqlx::query(MAKE_PENDING_AGAIN)
        .bind(rig.clock.now().as_micros())
        .execute(&rig.admin)
        .await?;
    sqlx::query("VACUUM ANALYZE tasks")
        .execute(&rig.admin)
        .await?;
    let before = settled_counts(&rig.admin).await?;
    let t0 = Instant::now();
    let done = Arc::new(AtomicU64::new(0));
    let floor: Vec<_> = (0..config.workers)
        .map(|i| {
            let (store, clock, done) = (rig.store.clone(), rig.clock.clone(), done.clone());
            tokio::spawn(claim_and_complete(store, clock, i, config.batch, done))
        })
        .collect();
    for f in floor {
        let _ = f.await;
    }
    let floor_time = t0.elapsed();
    let floor_done = done.load(Ordering::Relaxed).max(1);
    report.floor_events_per_s = floor_done as f64 / floor_time.as_secs_f64();
    let after = settled_counts(&rig.admin).await?;
    report.floor_writes = PhaseWrites::between(before, after, floor_done);
    progress(&format!(
        "SQL floor: {:.0} events/s (ratio {:.2})",
        report.floor_events_per_s,
        report.ratio()
    ));
    Ok(())
}

/// Worker `i`: claims notification batches and completes them as delivered until a claim finds
/// nothing; counts the completed rows in `done`.
async fn claim_and_complete(
    store: PgStore,
    clock: ScaledClock,
    i: usize,
    batch: usize,
    done: Arc<AtomicU64>,
) {
    loop {
        let now = clock.now();
        let claimed = match store
            .claim(LeaseKind::Notify, claim_req(i, now, batch))
            .await
        {
            Ok(c) => c,
            Err(_) => continue,
        };
        if claimed.is_empty() {
            return;
        }
        let writes = succeeded(&claimed);
        if let Ok(out) = store.finish_notifications(writes, clock.now()).await {
            done.fetch_add(
                out.iter().filter(|o| o.is_ok()).count() as u64,
                Ordering::Relaxed,
            );
        }
    }
}
