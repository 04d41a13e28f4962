//! Part 4, old snapshot: a poll treadmill (claim, apply a result, due again a second later) for
//! a baseline, then again while another session holds a `REPEATABLE READ` snapshot open,
//! measured per 10 s window.

use super::{claim_req, BenchConfig, BenchError, BenchReport, Rig};
use crate::clock::ScaledClock;
use sqlx::{Connection, PgConnection};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tasklatch_core::lease::LeaseKind;
use tasklatch_core::policy::Policy;
use tasklatch_core::ports::Clock;
use tasklatch_core::snapshot::Observed;
use tasklatch_core::status::RemoteStatus;
use tasklatch_core::store::{PollWrite, Store};
use tasklatch_core::transitions::poll;
use tasklatch_pg::PgStore;

/// Warm-up before the baseline is measured.
const WARM_UP: Duration = Duration::from_secs(2);

/// The length of a measuring window while the snapshot is held, in seconds.
const WINDOW_SECS: u64 = 10;

/// Runs part 4 and fills its fields of `report`.
pub(super) async fn run(
    rig: &Rig,
    config: &BenchConfig,
    report: &mut BenchReport,
    progress: &mut (impl FnMut(&str) + Send),
) -> Result<(), BenchError> {
    progress(&format!(
        "treadmill baseline {} s, then {} s with an old snapshot",
        config.baseline_secs, config.snapshot_secs
    ));
    let counter = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let treadmill: Vec<_> = (0..config.workers)
        .map(|i| {
            let mill = Treadmill {
                store: rig.store.clone(),
                clock: rig.clock.clone(),
                policy: rig.policy.clone(),
                worker: i,
                batch: config.batch,
            };
            tokio::spawn(mill.run(counter.clone(), stop.clone()))
        })
        .collect();
    tokio::time::sleep(WARM_UP).await;
    let baseline_secs = config.baseline_secs.max(1);
    report.treadmill_baseline = rate(&counter, baseline_secs).await;
    progress(&format!(
        "treadmill baseline {:.0} rows/s; holding a snapshot",
        report.treadmill_baseline
    ));
    let mut snap = PgConnection::connect(&rig.url).await?;
    sqlx::raw_sql("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM threads;")
        .execute(&mut snap)
        .await?;
    let windows_n = config.snapshot_secs.div_ceil(WINDOW_SECS).max(1);
    for w in 0..windows_n {
        let secs = (config.snapshot_secs - w * WINDOW_SECS).clamp(1, WINDOW_SECS);
        let rate = rate(&counter, secs).await;
        progress(&format!(
            "  snapshot held, window {}: {rate:.0} rows/s",
            w + 1
        ));
        report.treadmill_windows.push(rate);
    }
    sqlx::raw_sql("COMMIT").execute(&mut snap).await?;
    stop.store(true, Ordering::SeqCst);
    for t in treadmill {
        let _ = t.await;
    }
    Ok(())
}

/// Rows per second the treadmill moves over the next `secs` seconds.
async fn rate(counter: &AtomicU64, secs: u64) -> f64 {
    let c0 = counter.load(Ordering::Relaxed);
    tokio::time::sleep(Duration::from_secs(secs)).await;
    (counter.load(Ordering::Relaxed) - c0) as f64 / secs as f64
}

/// One treadmill worker.
struct Treadmill {
    store: PgStore,
    clock: ScaledClock,
    policy: Policy,
    worker: usize,
    batch: usize,
}

impl Treadmill {
    /// Claims due polls and applies a `working` result (due again at the policy's poll interval)
    /// until `stop`; counts the rows written in `counter`.
    async fn run(self, counter: Arc<AtomicU64>, stop: Arc<AtomicBool>) {
        while !stop.load(Ordering::Relaxed) {
            let now = self.clock.now();
            let req = claim_req(self.worker, now, self.batch);
            let Ok(claimed) = self.store.claim(LeaseKind::Poll, req).await else {
                continue;
            };
            if claimed.is_empty() {
                tokio::time::sleep(Duration::from_millis(5)).await;
                continue;
            }
            let at = self.clock.now();
            let writes: Vec<PollWrite> = claimed
                .iter()
                .map(|c| PollWrite {
                    task_id: c.row.id().clone(),
                    lease: c.lease.clone(),
                    completed_at: at,
                    update: poll::on_report(&c.row, Ok(working()), at, &self.policy),
                })
                .collect();
            if let Ok(out) = self.store.apply_polls(writes, at).await {
                counter.fetch_add(
                    out.iter().filter(|o| o.is_ok()).count() as u64,
                    Ordering::Relaxed,
                );
            }
        }
    }
}

/// The remote state the treadmill applies: still working, poll again as soon as allowed.
fn working() -> Observed {
    Observed {
        status: RemoteStatus::Working,
        result: None,
        result_truncated: false,
        artifact: None,
        error: None,
        input_request: None,
        poll_hint: Some(Duration::ZERO),
    }
}
