//! The start-up clock check (issue 11 item 6): leases are stamped and judged by each worker's
//! clock, so a worker whose clock is off the database's by more than `engine.max_clock_skew_ms`
//! refuses to start, with the measured skew in its message. Every pass checks again
//! ([`tasklatch_core::engine::ClockCheck`]): a clock that drifts later only stops the claims
//! (`tasklatch_skew_refused_passes_total`), it does not stop the process.

use crate::metrics::Metrics;
use crate::run::StartError;
use std::time::Duration;
use tasklatch_core::engine::{measure, ClockCheck};
use tasklatch_core::ports::Clock;
use tasklatch_core::store::Store;

/// Measures `clock` against `store`'s and refuses a skew beyond `max` or a clock that cannot
/// be read; sets the skew gauge. Returns the skew in milliseconds (store minus worker), `None`
/// for a store without a clock.
pub async fn check_at_start<S: Store, C: Clock>(
    store: &S,
    clock: &C,
    max: Duration,
    metrics: &Metrics,
) -> Result<Option<i64>, StartError> {
    let check = measure(store, clock, max).await;
    metrics.clock_checked(check);
    match check {
        ClockCheck::Refused(ms) => Err(StartError::Clock(format!(
            "this host's clock is {} ms {} the database's, more than engine.max_clock_skew_ms = {}: \
             fix the clock synchronisation (NTP) of this host or the database's",
            ms.unsigned_abs(),
            if ms < 0 { "ahead of" } else { "behind" },
            max.as_millis()
        ))),
        ClockCheck::Unreadable => Err(StartError::Database(
            "the database's clock could not be read".into(),
        )),
        ClockCheck::Within(ms) => {
            tracing::info!(skew_ms = ms, "the database's clock agrees with this host's");
            Ok(Some(ms))
        }
        ClockCheck::NoStoreClock => Ok(None),
    }
}
