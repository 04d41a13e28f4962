//! A lane: one engine, with its own worker id, passing on a cadence.
//!
//! A lane runs [`Engine::run_once`] (cancel, poll and notify loops) whenever a wake-up arrives,
//! at least once per tick, and again at once while a loop claimed a full batch (there is more
//! due). It stops when told to: the worker's shutdown first calls `begin_shutdown` on every
//! engine, so the pass in progress finishes its external calls and releases what it had not
//! started without counting a failure; the lane then makes no further pass.

use crate::metrics::Metrics;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tasklatch_core::engine::{Engine, LoopReport, PassReport};
use tasklatch_core::lease::LeaseKind;
use tasklatch_core::ports::{Clock, Driver, Launcher};
use tasklatch_core::store::Store;
use tasklatch_core::time::Timestamp;
use tokio::sync::{watch, Notify};

/// When a lane last started or ended a pass (for readiness).
#[derive(Debug, Default)]
pub struct Heartbeat(AtomicI64);

impl Heartbeat {
    /// Records `now`.
    pub fn beat(&self, now: Timestamp) {
        self.0.store(now.as_micros(), Ordering::Relaxed);
    }

    /// The last beat (the epoch before the first).
    pub fn last(&self) -> Timestamp {
        Timestamp::from_micros(self.0.load(Ordering::Relaxed))
    }
}

/// What a lane did, reported when it stops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LaneSummary {
    /// Passes made.
    pub passes: u64,
    /// Leases given back by passes that ended after the stop was requested — the worker's own
    /// shutdown, never counted as a failure.
    pub released_at_stop: usize,
}

/// One engine on a cadence.
pub struct Lane<S, D, L, C> {
    /// The lane's number (part of its worker id).
    pub index: usize,
    /// The engine, shared with the API (lane 0 serves submits).
    pub engine: Arc<Engine<S, D, L, C>>,
    /// This lane's wake-up.
    pub wake: Arc<Notify>,
    /// The longest wait between passes.
    pub tick: Duration,
    /// Where passes are counted.
    pub metrics: Arc<Metrics>,
    /// When the lane last moved.
    pub heartbeat: Arc<Heartbeat>,
}

impl<S: Store, D: Driver, L: Launcher, C: Clock> Lane<S, D, L, C> {
    /// Passes until `stop` turns true (or its sender is gone).
    pub async fn run(self, clock: &C, mut stop: watch::Receiver<bool>) -> LaneSummary {
        let batch = self.engine.policy().batch_size;
        let mut summary = LaneSummary::default();
        while !*stop.borrow() {
            self.heartbeat.beat(clock.now());
            let report = self.engine.run_once().await;
            self.heartbeat.beat(clock.now());
            self.observe(&report);
            summary.passes += 1;
            if *stop.borrow() {
                summary.released_at_stop += released(&report);
                break;
            }
            if full(&report, batch) {
                tokio::task::yield_now().await;
                continue;
            }
            tokio::select! {
                biased;
                changed = stop.changed() => if changed.is_err() { break },
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep(self.tick) => {}
            }
        }
        tracing::info!(
            lane = self.index,
            passes = summary.passes,
            released_at_stop = summary.released_at_stop,
            "lane stopped; leases released at stop count no failure"
        );
        summary
    }

    fn observe(&self, r: &PassReport) {
        self.metrics.passed();
        self.metrics.clock_checked(r.clock);
        for (kind, l) in loops(r) {
            self.metrics.pass(kind, l.elapsed);
        }
    }
}

fn loops(r: &PassReport) -> [(LeaseKind, &LoopReport); 3] {
    [
        (LeaseKind::Cancel, &r.cancel),
        (LeaseKind::Poll, &r.poll),
        (LeaseKind::Notify, &r.notify),
    ]
}

/// Some loop claimed a whole batch: more rows are probably due.
fn full(r: &PassReport, batch: usize) -> bool {
    loops(r).iter().any(|(_, l)| l.claimed >= batch)
}

fn released(r: &PassReport) -> usize {
    loops(r).iter().map(|(_, l)| l.released).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tasklatch_core::engine::Engine;
    use tasklatch_core::ids::{RunId, ServerId, ThreadId, WorkerId};
    use tasklatch_core::mem_store::MemStore;
    use tasklatch_core::policy::Policy;
    use tasklatch_core::ports::{
        DriverError, LaunchOutcome, RunRequest, RunStatus, SubmitRequest, Submitted,
    };
    use tasklatch_core::secret::RemoteHandle;
    use tasklatch_core::snapshot::RemoteReport;

    struct NoDriver;
    impl Driver for NoDriver {
        async fn submit(&self, _: &SubmitRequest) -> Result<Submitted, DriverError> {
            Err(DriverError::Rejected("none".into()))
        }
        async fn get_status(
            &self,
            _: &ServerId,
            _: &RemoteHandle,
        ) -> Result<RemoteReport, DriverError> {
            Err(DriverError::UnknownTask)
        }
        async fn cancel(
            &self,
            _: &ServerId,
            _: &RemoteHandle,
        ) -> Result<RemoteReport, DriverError> {
            Err(DriverError::UnknownTask)
        }
    }

    struct NoLauncher;
    impl Launcher for NoLauncher {
        async fn start_run(&self, _: RunRequest) -> LaunchOutcome {
            LaunchOutcome::Failed("none".into())
        }
        async fn run_status(&self, _: &ThreadId, _: &RunId) -> Result<RunStatus, String> {
            Ok(RunStatus::Missing)
        }
    }

    #[tokio::test]
    async fn a_wakeup_makes_a_pass_at_once_and_stop_ends_the_lane() {
        let clock = crate::clock::SystemClock;
        let engine = Engine::new(
            MemStore::new(Policy::default()),
            NoDriver,
            NoLauncher,
            clock,
            WorkerId::from("w-1-0"),
            Policy::default(),
        );
        let metrics = Arc::new(Metrics::new());
        let lane = Lane {
            index: 0,
            engine: Arc::new(engine),
            wake: Arc::new(Notify::new()),
            tick: Duration::from_secs(3600),
            metrics: metrics.clone(),
            heartbeat: Arc::new(Heartbeat::default()),
        };
        let (wake, heartbeat) = (lane.wake.clone(), lane.heartbeat.clone());
        let (tx, rx) = watch::channel(false);
        let running = tokio::spawn(async move { lane.run(&clock, rx).await });
        tokio::time::sleep(Duration::from_millis(100)).await;
        let first = heartbeat.last();
        assert!(first > Timestamp::EPOCH, "the first pass starts at once");
        wake.notify_one();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(
            heartbeat.last() > first,
            "a wake-up made a second pass within 100 ms"
        );
        let _ = tx.send(true);
        let summary = tokio::time::timeout(Duration::from_secs(2), running)
            .await
            .unwrap_or_else(|_| panic!("the lane did not stop"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(summary.passes, 2);
        assert!(metrics.render().contains("tasklatch_passes_total 2"));
    }
}
