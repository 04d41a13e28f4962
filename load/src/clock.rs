//! A shared, monotonic, sped-up clock: every engine, the driver, the launcher and the agent
//! runtime read the same virtual time, so the engine's fixed floors (a 60 s re-poll of
//! `input_required`, a 1 s minimum poll delay) pass in a fraction of real time.

use std::sync::Arc;
use std::time::{Duration, Instant};
use tasklatch_core::ports::Clock;
use tasklatch_core::time::Timestamp;

/// Virtual time = `origin` + real time elapsed × `speed`.
#[derive(Clone)]
pub struct ScaledClock {
    inner: Arc<(Instant, Timestamp, u32)>,
}

impl ScaledClock {
    /// A clock starting at `origin` now, running `speed` times faster than real time.
    pub fn new(origin: Timestamp, speed: u32) -> Self {
        ScaledClock {
            inner: Arc::new((Instant::now(), origin, speed.max(1))),
        }
    }

    /// Real time for `virtual_time` of this clock.
    pub fn real(&self, virtual_time: Duration) -> Duration {
        virtual_time / self.inner.2
    }

    /// Real time elapsed since the clock started.
    pub fn elapsed(&self) -> Duration {
        self.inner.0.elapsed()
    }
}

impl Clock for ScaledClock {
    fn now(&self) -> Timestamp {
        let (start, origin, speed) = &*self.inner;
        origin.plus(start.elapsed() * *speed)
    }

    fn monotonic(&self) -> Duration {
        let (start, _, speed) = &*self.inner;
        start.elapsed() * *speed
    }

    /// `d` of virtual time: `d / speed` of real time.
    async fn sleep(&self, d: Duration) {
        tokio::time::sleep(self.real(d)).await;
    }
}
