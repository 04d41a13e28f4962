//! The skew guard: before a pass claims, the engine compares its clock with the store's.
//!
//! Leases are stamped and judged by the claimer's clock, so a worker whose clock runs ahead
//! sees other workers' leases as expired while their external calls still run, and one that
//! runs behind holds leases the others already count as free. Each pass therefore reads the
//! store's clock between two reads of its own and takes the skew as the store's time minus the
//! midpoint of the two (the call's latency splits evenly, at worst half a round trip off). A
//! skew beyond [`crate::policy::Policy::max_clock_skew`], or a store time that cannot be read,
//! makes the pass claim nothing: no lease is taken on a clock that may be wrong. A store that
//! keeps no clock is not checked.

use super::Engine;
use crate::mutation::{self, planted, Mutant};
use crate::ports::{Clock, Driver, Launcher};
use crate::store::Store;
use crate::time::{micros_of, Timestamp};
use std::time::Duration;

/// What the clock check before a pass found.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum ClockCheck {
    /// The store keeps no clock: nothing to compare, claims go ahead.
    #[default]
    NoStoreClock,
    /// Store minus engine, in milliseconds, within the limit: claims go ahead.
    Within(i64),
    /// Store minus engine, in milliseconds, beyond the limit: the pass claimed nothing.
    Refused(i64),
    /// The store's time could not be read: the pass claimed nothing (a store error).
    Unreadable,
}

impl ClockCheck {
    /// Whether the pass may claim.
    pub fn allows_claims(self) -> bool {
        matches!(self, ClockCheck::NoStoreClock | ClockCheck::Within(_))
    }

    /// The measured skew (store minus engine, milliseconds), when one was measured.
    pub fn skew_ms(self) -> Option<i64> {
        match self {
            ClockCheck::Within(ms) | ClockCheck::Refused(ms) => Some(ms),
            ClockCheck::NoStoreClock | ClockCheck::Unreadable => None,
        }
    }
}

/// Store time minus the midpoint of `before` and `after`, in whole milliseconds.
pub fn skew_ms(before: Timestamp, store: Timestamp, after: Timestamp) -> i64 {
    let (b, a) = (before.as_micros(), after.as_micros());
    let midpoint = b + a.saturating_sub(b) / 2;
    store.as_micros().saturating_sub(midpoint) / 1_000
}

/// Reads `store`'s clock between two reads of `clock` and judges the skew against `max` (see
/// the module's contract). Also what a worker checks once at start-up.
pub async fn measure<S: Store, C: Clock>(store: &S, clock: &C, max: Duration) -> ClockCheck {
    let before = clock.now();
    let read = store.store_time().await;
    let after = clock.now();
    match read {
        Ok(Some(store)) => {
            let skew = skew_ms(before, store, after);
            if skew.unsigned_abs() <= (micros_of(max) / 1_000).unsigned_abs() {
                ClockCheck::Within(skew)
            } else {
                ClockCheck::Refused(skew)
            }
        }
        Ok(None) => ClockCheck::NoStoreClock,
        Err(e) => {
            tracing::warn!(error = %e, "the store's clock could not be read");
            ClockCheck::Unreadable
        }
    }
}

impl<S: Store, D: Driver, L: Launcher, C: Clock> Engine<S, D, L, C> {
    /// [`measure`]s this engine's clock against the store's with the policy's
    /// `max_clock_skew`. Logs a warning when claims are refused.
    pub(super) async fn check_clock(&self) -> ClockCheck {
        let check = measure(&self.store, &self.clock, self.policy.max_clock_skew).await;
        let check = mutation::substitute(Mutant::SkewGuardOff, check, planted::skew_ignored);
        match check {
            ClockCheck::Refused(skew) => {
                tracing::warn!(
                    skew_ms = skew,
                    max_clock_skew_ms = micros_of(self.policy.max_clock_skew) / 1_000,
                    "this worker's clock is off the store's by more than max_clock_skew; this pass claims nothing"
                );
                check
            }
            ClockCheck::Unreadable => {
                tracing::warn!("the store's clock could not be read; this pass claims nothing");
                check
            }
            ClockCheck::NoStoreClock | ClockCheck::Within(_) => check,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64) -> Timestamp {
        Timestamp::from_micros(ms * 1_000)
    }

    #[test]
    fn skew_is_store_time_minus_the_midpoint_of_the_bracket() {
        assert_eq!(skew_ms(at(1_000), at(1_500), at(2_000)), 0);
        assert_eq!(skew_ms(at(1_000), at(21_500), at(2_000)), 20_000);
        assert_eq!(skew_ms(at(1_000), at(-18_500), at(2_000)), -20_000);
    }

    #[test]
    fn only_a_measured_skew_within_the_limit_or_no_store_clock_allows_claims() {
        assert!(ClockCheck::NoStoreClock.allows_claims());
        assert!(ClockCheck::Within(-1_999).allows_claims());
        assert!(!ClockCheck::Refused(2_001).allows_claims());
        assert!(!ClockCheck::Unreadable.allows_claims());
        assert_eq!(ClockCheck::Refused(-8_000).skew_ms(), Some(-8_000));
        assert_eq!(ClockCheck::Unreadable.skew_ms(), None);
    }
}
