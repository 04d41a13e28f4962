//! What a stress run tells: a progress line about once a second, and the final report.

use super::check::Verdict;
use std::time::Duration;

/// Where a run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Faults on (aborts and kills too with chaos).
    Chaos,
    /// Chaos off: notifications drain.
    Heal,
    /// Everything settled.
    Done,
}

/// A progress snapshot, about once a second.
#[derive(Clone, Debug)]
pub struct Progress {
    /// Real time since the start.
    pub elapsed: Duration,
    /// Where the run is.
    pub phase: Phase,
    /// Tasks persisted.
    pub submitted: u64,
    /// Remote tasks terminal now.
    pub remote_terminal: usize,
    /// Rows whose notification is delivered.
    pub delivered_rows: i64,
    /// Rows with undelivered work.
    pub undelivered_rows: i64,
    /// Runs started (or found) by the launcher.
    pub runs: u64,
    /// 409 answers.
    pub busy: u64,
    /// Engine tasks aborted by chaos.
    pub aborts: u64,
    /// Backends killed by chaos.
    pub kills: u64,
}

impl Progress {
    /// One human-readable line.
    pub fn line(&self) -> String {
        format!(
            "[{:>6.1}s {:?}] submitted={} remote_terminal={} delivered_rows={} undelivered_rows={} runs={} busy409={} aborts={} kills={}",
            self.elapsed.as_secs_f64(),
            self.phase,
            self.submitted,
            self.remote_terminal,
            self.delivered_rows,
            self.undelivered_rows,
            self.runs,
            self.busy,
            self.aborts,
            self.kills
        )
    }
}

/// The outcome of a stress run.
#[derive(Clone, Debug)]
pub struct StressReport {
    /// lost / duplicated / unexpected / delivered.
    pub verdict: Verdict,
    /// Whether every notification settled before the deadline.
    pub settled: bool,
    /// Real time from the first submit to settling.
    pub elapsed: Duration,
    /// Delivered events per real second.
    pub events_per_s: f64,
    /// Tasks persisted.
    pub tasks: u64,
    /// Runs in the ledger.
    pub runs: u64,
    /// Engine aborts and backend kills.
    pub aborts: u64,
    /// Backend kills.
    pub kills: u64,
    /// Chaos steps that killed every backend at once (a database restart, as clients see it).
    pub restarts: u64,
    /// Threads deleted.
    pub deleted_threads: u64,
    /// Cancels requested.
    pub cancels: u64,
    /// Launcher counters, as text.
    pub launcher: String,
}

impl StressReport {
    /// Whether lost, duplicated and unexpected are all zero.
    pub fn passed(&self) -> bool {
        self.verdict.lost == 0 && self.verdict.duplicated == 0 && self.verdict.unexpected == 0
    }

    /// The final line: `lost=0 duplicated=0 unexpected=0 delivered=N events_per_s=X`.
    pub fn line(&self) -> String {
        format!(
            "lost={} duplicated={} unexpected={} delivered={} events_per_s={:.0}",
            self.verdict.lost,
            self.verdict.duplicated,
            self.verdict.unexpected,
            self.verdict.delivered,
            self.events_per_s
        )
    }
}
