//! The panel bench's figures and its report.

use super::PanelConfig;
use crate::bench::wakeup::LatencyStats;
use std::fmt::Write;
use std::time::Duration;

/// The goal of issue 26: a change on an open panel within this, at the 99th percentile.
const GOAL_P99: Duration = Duration::from_secs(1);

/// What the database did in a window (`pg_stat_database`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DbWork {
    /// Transactions committed or rolled back (each read outside a transaction is one).
    pub transactions: i64,
    /// Rows read (returned by scans plus fetched by index).
    pub rows: i64,
}

impl DbWork {
    /// The work between `before` and `self`.
    pub fn since(self, before: DbWork) -> DbWork {
        DbWork {
            transactions: self.transactions - before.transactions,
            rows: self.rows - before.rows,
        }
    }
}

/// The three phases' figures.
#[derive(Clone, Debug)]
pub struct PanelReport {
    /// What was measured.
    pub config: PanelConfig,
    /// Change acknowledged → on its panel, over phase 3.
    pub latency: LatencyStats,
    /// Phase 1: the changes with no panel open.
    pub baseline: DbWork,
    /// Phase 2: the open panels, idle, over [`PanelReport::idle_window`].
    pub idle: DbWork,
    /// How long phase 2's window lasted (the idle time and the wait for the counters).
    pub idle_window: Duration,
    /// Phase 3: the same changes with the panels open.
    pub live: DbWork,
    /// Pages the panels fetched during phase 3.
    pub renders: u64,
}

impl PanelReport {
    /// The panels' own work per change: phase 3 less phase 1, per change.
    pub fn per_change(&self) -> (f64, f64) {
        let own = self.live.since(self.baseline);
        let n = f64::from(self.config.changes);
        (own.transactions as f64 / n, own.rows as f64 / n)
    }

    /// The summary lines printed at the end.
    pub fn summary(&self) -> String {
        let (tx, rows) = self.per_change();
        let idle_per_min = self.idle.transactions as f64 * 60.0 / self.idle_window.as_secs_f64();
        let met = if self.latency.p99 <= GOAL_P99 {
            "met"
        } else {
            "NOT met"
        };
        format!(
            "change -> open panel: {}\n\
             goal p99 <= 1000 ms: {met}\n\
             {} panels open and idle: {} transactions in {:.0} s ({idle_per_min:.1}/min, the \
             counters' own reads included)\n\
             per change, the panels' own: {tx:.2} transactions, {rows:.1} rows read \
             ({} pages fetched for {} changes)\n",
            self.latency.line(),
            self.config.panels,
            self.idle.transactions,
            self.idle_window.as_secs_f64(),
            self.renders,
            self.config.changes,
        )
    }

    /// The Markdown report.
    pub fn markdown(&self, command: &str) -> String {
        let c = &self.config;
        let mut out =
            String::from("# The background-task panel: push latency and database load\n\n");
        let _ = writeln!(out, "Command: `{command}`\n");
        let _ = writeln!(
            out,
            "{} panels open (one per owner and thread), {} changes per phase at {}/s, each a \
             submit into the next owner's thread. The worker's router with the panel on and its \
             one listener, on PostgreSQL; each panel behaves as the page's script (push stream, \
             200 ms debounce, the page fetched again) without a browser's drawing. Latency: from \
             the submit's acknowledgement (after its commit) to the first fetched page of that \
             thread's panel showing the task. Thread ownership is answered without an agent \
             server, so a render's cost here is the database's alone.\n",
            c.panels, c.changes, c.rate
        );
        let l = &self.latency;
        let ms = |d: Duration| format!("{:.1}", d.as_secs_f64() * 1e3);
        let _ = writeln!(out, "| changes | p50 ms | p99 ms | max ms | mean ms |");
        let _ = writeln!(out, "|---|---|---|---|---|");
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |\n",
            l.samples,
            ms(l.p50),
            ms(l.p99),
            ms(l.max),
            ms(l.mean)
        );
        let _ = writeln!(out, "| phase | transactions | rows read |");
        let _ = writeln!(out, "|---|---|---|");
        let rows = [
            ("1: changes, no panel open", self.baseline),
            ("2: panels open, idle", self.idle),
            ("3: changes, panels open", self.live),
        ];
        for (name, w) in rows {
            let _ = writeln!(out, "| {name} | {} | {} |", w.transactions, w.rows);
        }
        let _ = writeln!(out, "\n```\n{}```", self.summary());
        out
    }
}
