//! The bench's results: a short summary for the terminal and a Markdown report.

use super::server::{Counts, RowWrites};
use super::Coalescing;
use std::time::Duration;
use tasklatch_core::lease::LeaseKind;

/// Latency of one claim kind.
#[derive(Clone, Debug)]
pub struct Latency {
    /// The claim.
    pub kind: LeaseKind,
    /// Claims measured.
    pub samples: usize,
    /// Median.
    pub p50: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// Worst.
    pub max: Duration,
    /// Rows claimed per claim, on average.
    pub rows_per_claim: f64,
}

/// What one throughput phase wrote, per delivered event.
#[derive(Clone, Copy, Debug, Default)]
pub struct PhaseWrites {
    /// Events delivered in the phase.
    pub events: u64,
    /// Committed transactions of the bench database, read-only ones included.
    pub commits: i64,
    /// Row versions written to `tasks`.
    pub tasks: RowWrites,
    /// Row versions written to `runs` (the run ledger).
    pub runs: RowWrites,
}

impl PhaseWrites {
    /// The counts between `before` and `after`, for `events` events.
    pub(super) fn between(before: Counts, after: Counts, events: u64) -> PhaseWrites {
        PhaseWrites {
            events,
            commits: after.commits - before.commits,
            tasks: after.tasks.since(before.tasks),
            runs: after.runs.since(before.runs),
        }
    }

    fn per_event(&self, count: i64) -> f64 {
        if self.events == 0 {
            0.0
        } else {
            count as f64 / self.events as f64
        }
    }

    /// Commits per event.
    pub fn commits_per_event(&self) -> f64 {
        self.per_event(self.commits)
    }

    /// Task-row versions (updates) per event.
    pub fn task_versions_per_event(&self) -> f64 {
        self.per_event(self.tasks.updates)
    }

    /// Heap-only task-row updates per event.
    pub fn task_hot_per_event(&self) -> f64 {
        self.per_event(self.tasks.hot)
    }

    /// The share of task-row updates that were heap-only, in percent.
    pub fn task_hot_percent(&self) -> f64 {
        if self.tasks.updates > 0 {
            100.0 * self.tasks.hot as f64 / self.tasks.updates as f64
        } else {
            0.0
        }
    }

    /// Run-ledger row versions (updates) per event.
    pub fn run_versions_per_event(&self) -> f64 {
        self.per_event(self.runs.updates)
    }
}

/// The results.
#[derive(Clone, Debug, Default)]
pub struct BenchReport {
    /// Events delivered end to end.
    pub e2e_events: u64,
    /// Wall time of the end-to-end run.
    pub e2e_time: Duration,
    /// Events per second end to end.
    pub e2e_events_per_s: f64,
    /// What the end-to-end run wrote (store, ledger and runtime together).
    pub e2e_writes: PhaseWrites,
    /// Events per second through the bare claim + complete cycle.
    pub floor_events_per_s: f64,
    /// What the floor wrote.
    pub floor_writes: PhaseWrites,
    /// Claim latencies at the million-row table.
    pub latency: Vec<Latency>,
    /// `EXPLAIN (ANALYZE, BUFFERS)` of each claim at the million-row table.
    pub explain: Vec<(String, String)>,
    /// Rows in the table for the latency part.
    pub table_rows: u64,
    /// Treadmill rows per second without an old snapshot.
    pub treadmill_baseline: f64,
    /// Treadmill rows per second per 10 s window while the old snapshot is held.
    pub treadmill_windows: Vec<f64>,
    /// Server settings that matter (version, fsync, synchronous_commit, …).
    pub settings: Vec<(String, String)>,
    /// Where the server came from.
    pub server: String,
    /// Total wall time.
    pub total: Duration,
    /// Time to bulk-insert the extra rows.
    pub bulk_time: Duration,
    /// Workers used.
    pub workers: usize,
    /// Claim batch size used.
    pub batch: usize,
    /// How the engines' ledger batched.
    pub ledger: Option<Coalescing>,
}

impl BenchReport {
    /// `e2e / floor`.
    pub fn ratio(&self) -> f64 {
        if self.floor_events_per_s > 0.0 {
            self.e2e_events_per_s / self.floor_events_per_s
        } else {
            0.0
        }
    }

    /// How the end-to-end ledger ran, in words.
    pub fn ledger_mode(&self) -> String {
        match self.ledger {
            Some(c) => format!(
                "coalescing: concurrent launches share one transaction, concurrent lookups one \
                 read (batches of at most {}, {} in flight per kind)",
                c.max_batch, c.leaders
            ),
            None => "one transaction per launch and per lookup".to_owned(),
        }
    }

    /// Short summary lines for the terminal.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "end to end: {:.0} events/s ({} events in {:.2}s)\n\
             ledger:     {}\n\
             SQL floor:  {:.0} events/s (claim + complete)\n\
             ratio:      {:.2}\n\
             per event:  end to end {}; floor {}\n",
            self.e2e_events_per_s,
            self.e2e_events,
            self.e2e_time.as_secs_f64(),
            self.ledger_mode(),
            self.floor_events_per_s,
            self.ratio(),
            writes_line(&self.e2e_writes),
            writes_line(&self.floor_writes),
        );
        for l in &self.latency {
            s.push_str(&format!(
                "claim {:<6} at {} rows: p50 {:.2} ms  p99 {:.2} ms  max {:.2} ms  ({} claims, {:.1} rows each)\n",
                l.kind.as_str(),
                self.table_rows,
                ms(l.p50),
                ms(l.p99),
                ms(l.max),
                l.samples,
                l.rows_per_claim
            ));
        }
        let worst = self
            .treadmill_windows
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min);
        s.push_str(&format!(
            "old snapshot: baseline {:.0} rows/s; while held: {} rows/s (worst {:.0}%)\n",
            self.treadmill_baseline,
            self.treadmill_windows
                .iter()
                .map(|w| format!("{w:.0}"))
                .collect::<Vec<_>>()
                .join(" / "),
            if worst.is_finite() {
                self.percent_of_baseline(worst)
            } else {
                0.0
            }
        ));
        s.push_str(&format!("total {:.1}s\n", self.total.as_secs_f64()));
        s
    }

    /// The report as Markdown, with the command that made it at the top.
    pub fn markdown(&self, command: &str) -> String {
        let mut m = format!(
            "# Benchmark\n\nRegenerate with:\n\n```\n{command}\n```\n\n\
             Machine: {} CPU cores. Server: {}.\n\n",
            std::thread::available_parallelism().map_or(0, |n| n.get()),
            self.server
        );
        m.push_str("| setting | value |\n|---|---|\n");
        for (k, v) in &self.settings {
            m.push_str(&format!("| {k} | {v} |\n"));
        }
        self.markdown_throughput(&mut m);
        self.markdown_latency(&mut m);
        self.markdown_snapshot(&mut m);
        m.push_str("\n## EXPLAIN (ANALYZE, BUFFERS) of each claim at the million-row table\n");
        for (kind, plan) in &self.explain {
            m.push_str(&format!("\n### {kind}\n\n```\n{plan}\n```\n"));
        }
        m.push_str(&format!(
            "\nTotal wall time: {:.1} s.\n",
            self.total.as_secs_f64()
        ));
        m
    }

    fn markdown_throughput(&self, m: &mut String) {
        m.push_str(&format!(
            "\n## Throughput\n\n| measure | value |\n|---|---|\n\
             | end to end | **{:.0} events/s** ({} events in {:.2} s) |\n\
             | run ledger, end to end | {} |\n\
             | SQL floor (claim + complete, same batch) | {:.0} events/s |\n\
             | ratio end to end / floor | {:.2} |\n\n\
             Per delivered event:\n\n\
             | phase | task-row versions | of them HOT | run-row versions | commits |\n\
             |---|---|---|---|---|\n\
             | end to end | {:.2} | {:.2} ({:.0}%) | {:.2} | {:.3} |\n\
             | floor | {:.2} | {:.2} ({:.0}%) | {:.2} | {:.3} |\n\n\
             Row versions: updates of `tasks` and of the run ledger's `runs` \
             (`pg_stat_user_tables`: `n_tup_upd`, `n_tup_hot_upd`); commits: every transaction \
             the bench database committed (`pg_stat_database`), read-only ones included. Both \
             read {} s after the phase, when every backend has reported its counts.\n",
            self.e2e_events_per_s,
            self.e2e_events,
            self.e2e_time.as_secs_f64(),
            self.ledger_mode(),
            self.floor_events_per_s,
            self.ratio(),
            self.e2e_writes.task_versions_per_event(),
            self.e2e_writes.task_hot_per_event(),
            self.e2e_writes.task_hot_percent(),
            self.e2e_writes.run_versions_per_event(),
            self.e2e_writes.commits_per_event(),
            self.floor_writes.task_versions_per_event(),
            self.floor_writes.task_hot_per_event(),
            self.floor_writes.task_hot_percent(),
            self.floor_writes.run_versions_per_event(),
            self.floor_writes.commits_per_event(),
            super::server::STATS_SETTLE.as_secs(),
        ));
    }

    fn markdown_latency(&self, m: &mut String) {
        m.push_str(&format!(
            "\n## Claim latency with {} rows\n\n(bulk insert took {:.1} s)\n\n\
             | claim | claims | rows/claim | p50 | p99 | max |\n|---|---|---|---|---|---|\n",
            self.table_rows,
            self.bulk_time.as_secs_f64()
        ));
        for l in &self.latency {
            m.push_str(&format!(
                "| {} | {} | {:.1} | {:.2} ms | {:.2} ms | {:.2} ms |\n",
                l.kind.as_str(),
                l.samples,
                l.rows_per_claim,
                ms(l.p50),
                ms(l.p99),
                ms(l.max)
            ));
        }
    }

    fn markdown_snapshot(&self, m: &mut String) {
        m.push_str(&format!(
            "\n## Old snapshot\n\nPoll treadmill (claim {} rows, apply a result, due again 1 s later), \
             {} workers. Baseline {:.0} rows/s. While another session holds a REPEATABLE READ \
             snapshot open, per 10 s window:\n\n",
            self.batch, self.workers, self.treadmill_baseline
        ));
        m.push_str("| window | rows/s | % of baseline |\n|---|---|---|\n");
        for (i, w) in self.treadmill_windows.iter().enumerate() {
            m.push_str(&format!(
                "| {}–{} s | {:.0} | {:.0}% |\n",
                i * 10,
                (i + 1) * 10,
                w,
                self.percent_of_baseline(*w)
            ));
        }
    }

    /// `rate` as a percentage of the treadmill's baseline (0 without a baseline).
    fn percent_of_baseline(&self, rate: f64) -> f64 {
        if self.treadmill_baseline > 0.0 {
            100.0 * rate / self.treadmill_baseline
        } else {
            0.0
        }
    }
}

/// One phase's writes per event, for the terminal.
fn writes_line(w: &PhaseWrites) -> String {
    format!(
        "{:.2} task-row versions ({:.0}% HOT), {:.2} run-row versions, {:.3} commits",
        w.task_versions_per_event(),
        w.task_hot_percent(),
        w.run_versions_per_event(),
        w.commits_per_event()
    )
}

/// A duration in milliseconds.
pub(super) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1_000.0
}
