//! The backlog gauges (`tasklatch_backlog_*`, see [`crate::metrics`]): how much work waits for
//! each loop and how many dead letters there are now, read from the database when `/metrics` is
//! scraped ([`crate::api::health::metrics`]) through [`PgStore::backlog`].
//!
//! Contracts:
//! - **Bounded load.** The database is read at most once per [`REFRESH_EVERY`] (15 s),
//!   however many scrapes come: a scrape within that time of the last read (successful or not)
//!   serves the values that read left; concurrent scrapes wait for the one read running. The
//!   read itself is bounded by the store (capped counts, its own statement timeout) and here by
//!   [`READ_WITHIN`] (the pool's wait included).
//! - **Failures keep the last values.** A read that fails or does not finish within
//!   [`READ_WITHIN`] changes no backlog gauge (they stay at what the last successful read set,
//!   0 before any; `tasklatch_backlog_refreshed_timestamp_seconds` tells how old they are), and
//!   counts `tasklatch_store_errors_total{op="backlog"}`.
//! - **Logged once.** The first failure after a success (or since start) logs one warning;
//!   further failures log nothing until a read succeeds again, which logs that once more.
//!
//! Several workers on one database each read it (at most once per 15 s each); the gauges of
//! every worker say the same, so dashboards and alerts take the `max` over instances.

use crate::metrics::Metrics;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tasklatch_core::time::Timestamp;
use tasklatch_pg::{BacklogRequest, PgStore};
use tokio::sync::Mutex;

/// The shortest time between two reads of the backlog.
pub const REFRESH_EVERY: Duration = Duration::from_secs(15);
/// A due row is overdue once it has been due for longer than this.
pub const OVERDUE_AFTER: Duration = Duration::from_secs(60);
/// The longest a read may take, waiting for a pooled connection included (the store's own
/// statement timeout, `tasklatch_pg::DEFAULT_BACKLOG_TIMEOUT`, is 2 s).
pub const READ_WITHIN: Duration = Duration::from_secs(3);

/// What one [`BacklogGauges::refresh`] did.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Refresh {
    /// The last read is recent: the gauges were left as they are, the database was not asked.
    Cached,
    /// The backlog was read and the gauges set.
    Read,
    /// The read failed or timed out: the gauges were left as they are.
    Failed,
}

/// Whether reads are failing, so that a run of failures is logged once.
#[derive(Debug, Default)]
struct Failing(bool);

impl Failing {
    /// A read failed: `true` when it is the first of a run (the one to log).
    fn failed(&mut self) -> bool {
        !std::mem::replace(&mut self.0, true)
    }

    /// A read succeeded: `true` when it ends a run of failures (the one to log).
    fn succeeded(&mut self) -> bool {
        std::mem::replace(&mut self.0, false)
    }
}

/// When the last read started, and whether reads are failing.
#[derive(Debug, Default)]
struct State {
    last_read: Option<Instant>,
    failing: Failing,
}

/// The backlog gauges' refresher: one per worker, shared by its scrapes.
pub struct BacklogGauges {
    store: PgStore,
    metrics: Arc<Metrics>,
    every: Duration,
    overdue_after: Duration,
    state: Mutex<State>,
}

impl BacklogGauges {
    /// Gauges in `metrics` read from `store`, at most every [`REFRESH_EVERY`], overdue after
    /// [`OVERDUE_AFTER`]. Reads nothing yet.
    pub fn new(store: PgStore, metrics: Arc<Metrics>) -> Self {
        BacklogGauges {
            store,
            metrics,
            every: REFRESH_EVERY,
            overdue_after: OVERDUE_AFTER,
            state: Mutex::new(State::default()),
        }
    }

    /// The same, reading at most every `every` instead (tests).
    pub fn refreshing_every(mut self, every: Duration) -> Self {
        self.every = every;
        self
    }

    /// Reads the backlog at `now` (this worker's clock, as for its claims) into the gauges,
    /// unless the last read started less than the refresh interval ago (see the module for
    /// the contracts). Never fails: a failure is logged (once per run) and counted.
    pub async fn refresh(&self, now: Timestamp) -> Refresh {
        let mut state = self.state.lock().await;
        if state.last_read.is_some_and(|at| at.elapsed() < self.every) {
            return Refresh::Cached;
        }
        state.last_read = Some(Instant::now());
        let req = BacklogRequest::new(now, self.overdue_after);
        let problem = match tokio::time::timeout(READ_WITHIN, self.store.backlog(req)).await {
            Ok(Ok(backlog)) => {
                self.metrics.backlog(&backlog);
                if state.failing.succeeded() {
                    tracing::info!("backlog gauges read again");
                }
                return Refresh::Read;
            }
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("no answer within {} s", READ_WITHIN.as_secs()),
        };
        self.metrics.store_error("backlog");
        if state.failing.failed() {
            tracing::warn!(
                error = %problem,
                "backlog gauges not read: they keep their last values until a read succeeds \
                 (further failures are not logged)"
            );
        }
        Refresh::Failed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_of_failures_is_reported_once_and_so_is_its_end() {
        let mut f = Failing::default();
        assert!(!f.succeeded(), "a success without failures before it");
        assert!(f.failed(), "the first failure");
        assert!(!f.failed());
        assert!(!f.failed());
        assert!(f.succeeded(), "the end of the run");
        assert!(!f.succeeded());
        assert!(f.failed(), "a new run");
    }
}
