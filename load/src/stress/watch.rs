//! Watching a stress run: every 250 ms one scan of the run's rows; chaos is turned off once every
//! remote task is terminal (or half the deadline passed), and the run is settled when every row
//! is persisted, finished and delivered with nothing in flight.

use super::chaos::Chaos;
use super::report::{Phase, Progress};
use super::users::Submissions;
use super::world::Shared;
use sqlx::{PgPool, Row};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// How often the rows are scanned.
const SCAN_EVERY: Duration = Duration::from_millis(250);

/// How often progress is reported (and once more when settled).
const REPORT_EVERY: Duration = Duration::from_secs(1);

/// The state of this run's rows, from one scan.
#[derive(Clone, Copy, Debug)]
struct Summary {
    rows: i64,
    active: i64,
    undelivered: i64,
    in_flight: i64,
    delivered: i64,
}

/// One scan of the rows whose owner matches `$1`.
const SUMMARY: &str = "SELECT count(*) AS rows, \
     count(*) FILTER (WHERE remote_status NOT IN ('completed', 'failed', 'cancelled') \
         AND cancel_status <> 'dead_letter') AS active, \
     count(*) FILTER (WHERE event_version > notified_version) AS undelivered, \
     count(*) FILTER (WHERE notify_status IN ('claimed', 'dispatched', 'retry')) AS in_flight, \
     count(*) FILTER (WHERE notify_status = 'delivered') AS delivered \
     FROM tasks WHERE owner LIKE $1";

/// The summary, or `None` when the scan failed (a killed connection: try again next time).
async fn summarize(admin: &PgPool, owner_pattern: &str) -> Option<Summary> {
    let row = sqlx::query(SUMMARY)
        .bind(owner_pattern)
        .fetch_one(admin)
        .await
        .ok()?;
    let get = |c: &str| row.try_get::<i64, _>(c).ok();
    Some(Summary {
        rows: get("rows")?,
        active: get("active")?,
        undelivered: get("undelivered")?,
        in_flight: get("in_flight")?,
        delivered: get("delivered")?,
    })
}

/// What the watcher looks at.
pub(super) struct Watched<'a> {
    pub admin: &'a PgPool,
    pub shared: &'a Shared,
    pub submissions: &'a Submissions,
    pub chaos: &'a Chaos,
    pub owner_pattern: String,
    pub started: Instant,
    pub deadline: Duration,
}

/// Watches until the run settled (returns the time it took) or the deadline passed (`None`).
pub(super) async fn until_settled(
    w: &Watched<'_>,
    on_progress: &mut (impl FnMut(&Progress) + Send),
) -> Option<Duration> {
    let mut phase = Phase::Chaos;
    let mut last_progress = Instant::now();
    loop {
        tokio::time::sleep(SCAN_EVERY).await;
        let all_submitted = w.submissions.finished();
        let submitted = w.submissions.count();
        let (_, remote_terminal) = w.shared.driver.counts();
        let summary = summarize(w.admin, &w.owner_pattern).await;
        let all_terminal = all_submitted && remote_terminal as u64 >= submitted;
        if phase == Phase::Chaos && (all_terminal || w.started.elapsed() > w.deadline / 2) {
            phase = Phase::Heal;
            w.chaos.calm();
        }
        let settled = all_submitted
            && summary.is_some_and(|s| {
                s.rows == submitted as i64
                    && s.active == 0
                    && s.undelivered == 0
                    && s.in_flight == 0
            });
        let settled_at = settled.then(|| w.started.elapsed());
        if settled {
            phase = Phase::Done;
        }
        if last_progress.elapsed() >= REPORT_EVERY || settled {
            last_progress = Instant::now();
            on_progress(&progress(w, phase, submitted, remote_terminal, summary));
        }
        if settled_at.is_some() {
            return settled_at;
        }
        if w.started.elapsed() > w.deadline {
            return None;
        }
    }
}

fn progress(
    w: &Watched<'_>,
    phase: Phase,
    submitted: u64,
    remote_terminal: usize,
    summary: Option<Summary>,
) -> Progress {
    let c = w.shared.launcher.counters();
    Progress {
        elapsed: w.started.elapsed(),
        phase,
        submitted,
        remote_terminal,
        delivered_rows: summary.map_or(-1, |s| s.delivered),
        undelivered_rows: summary.map_or(-1, |s| s.undelivered),
        runs: c.started.load(Ordering::Relaxed),
        busy: c.busy.load(Ordering::Relaxed),
        aborts: w.shared.aborts.load(Ordering::Relaxed),
        kills: w.shared.kills.load(Ordering::Relaxed),
    }
}
