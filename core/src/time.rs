//! Time as an input: whole microseconds since the Unix epoch.
//!
//! Nothing in core reads a system clock. Every store call and every transition receives the
//! current time from a [`crate::ports::Clock`] owned by the caller, so the simulation, the model
//! and Postgres all agree on what "now" is.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

/// An instant, in whole microseconds since 1970-01-01T00:00:00Z.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Timestamp(i64);

impl Timestamp {
    /// The Unix epoch.
    pub const EPOCH: Timestamp = Timestamp(0);

    /// An instant from whole microseconds since the epoch.
    pub const fn from_micros(micros: i64) -> Self {
        Timestamp(micros)
    }

    /// Whole microseconds since the epoch.
    pub const fn as_micros(self) -> i64 {
        self.0
    }

    /// `self + d`, saturating at the representable range.
    pub fn plus(self, d: Duration) -> Self {
        Timestamp(self.0.saturating_add(micros_of(d)))
    }

    /// `self - d`, saturating at the representable range.
    pub fn minus(self, d: Duration) -> Self {
        Timestamp(self.0.saturating_sub(micros_of(d)))
    }

    /// The duration from `earlier` to `self`, zero if `earlier` is later.
    pub fn since(self, earlier: Timestamp) -> Duration {
        Duration::from_micros(self.0.saturating_sub(earlier.0).max(0) as u64)
    }
}

/// Whole microseconds of a duration, saturating at `i64::MAX`.
pub fn micros_of(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t{}", self.0)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.0.div_euclid(1_000_000);
        let micros = self.0.rem_euclid(1_000_000);
        write!(f, "{secs}.{micros:06}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates_and_since_is_never_negative() {
        let t = Timestamp::from_micros(10);
        assert_eq!(t.plus(Duration::from_micros(5)).as_micros(), 15);
        assert_eq!(t.minus(Duration::from_micros(15)).as_micros(), -5);
        assert_eq!(
            Timestamp::from_micros(i64::MAX)
                .plus(Duration::from_secs(1))
                .as_micros(),
            i64::MAX
        );
        assert_eq!(t.since(Timestamp::from_micros(20)), Duration::ZERO);
        assert_eq!(Timestamp::from_micros(1_500_000).to_string(), "1.500000s");
    }
}
