//! The engine's clock: simulated time plus the worker's active skew.

use crate::plan::fault::FaultKind;
use crate::plan::naming::worker_host;
use crate::run::ctx::{timestamp, Ctx};
use std::sync::Arc;
use tasklatch_core::ports::Clock;
use tasklatch_core::time::Timestamp;

/// A clock at simulated time plus the worker's active skew.
pub struct SimClock {
    /// The run's shared context.
    pub ctx: Arc<Ctx>,
    /// The worker whose skew applies.
    pub worker: Option<u32>,
}

impl Clock for SimClock {
    fn now(&self) -> Timestamp {
        let elapsed = turmoil::sim_elapsed().unwrap_or_default();
        let t = elapsed.as_millis() as u64;
        let mut skew = 0;
        if let Some(worker) = self.worker {
            for (index, s) in self.ctx.active(t, |k| match k {
                FaultKind::Skew { worker: w, skew_ms } if *w == worker => Some(*skew_ms),
                _ => None,
            }) {
                self.ctx.fire(index, &worker_host(worker));
                skew += s;
            }
            let back = self.ctx.clock_stepped_back(worker, t);
            skew -= i64::try_from(back).unwrap_or(i64::MAX);
        }
        timestamp(elapsed, skew)
    }

    /// Simulated time since the run began: skew faults move the wall clock only.
    fn monotonic(&self) -> std::time::Duration {
        turmoil::sim_elapsed().unwrap_or_default()
    }

    /// Simulated time (the host's tokio timer under turmoil).
    async fn sleep(&self, d: std::time::Duration) {
        tokio::time::sleep(d).await;
    }
}
