//! The wall clock: core's [`Clock`] port over the operating system's time.
//!
//! Core never reads a clock; the worker is where real time enters. Every store call the
//! engines make receives its `now` from here, so workers on different hosts must keep their
//! clocks in sync (NTP): the skew between them eats into `min_lease_left`.

use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tasklatch_core::ports::Clock;
use tasklatch_core::time::Timestamp;

/// `SystemTime::now()` in whole microseconds since the Unix epoch (the epoch itself if the
/// system clock is set before it).
#[derive(Copy, Clone, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let micros = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros());
        Timestamp::from_micros(i64::try_from(micros).unwrap_or(i64::MAX))
    }

    /// Time since this process first asked, on the OS's monotonic clock.
    fn monotonic(&self) -> Duration {
        static ORIGIN: OnceLock<Instant> = OnceLock::new();
        ORIGIN.get_or_init(Instant::now).elapsed()
    }

    async fn sleep(&self, d: Duration) {
        tokio::time::sleep(d).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_reads_the_present_and_moves_forward() {
        let a = SystemClock.now();
        let b = SystemClock.now();
        // 2024-01-01T00:00:00Z: any machine running this is later.
        assert!(a.as_micros() > 1_704_067_200_000_000);
        assert!(b >= a);
    }
}
