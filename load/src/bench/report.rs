//! The bench's results: a short summary for the terminal and a Markdown report.

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

/// The results.
#[derive(Clone, Debug, Default)]
pub struct BenchReport {
    /// Events delivered end to end.
    pub e2e_events: u64,
    /// Wall time of the end-to-end run.
    pub e2e_time: Duration,
    /// Events per second end to end.
    pub e2e_events_per_s: f64,
    /// Committed transactions per delivered event (store, ledger and runtime together).
    pub e2e_commits_per_event: f64,
    /// Events per second through the bare claim + complete cycle.
    pub floor_events_per_s: f64,
    /// Commits per event in the floor.
    pub floor_commits_per_event: f64,
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
            "end to end: {:.0} events/s ({} events in {:.2}s, {:.2} commits/event)\n\
             ledger:     {}\n\
             SQL floor:  {:.0} events/s (claim + complete, {:.3} commits/event)\n\
             ratio:      {:.2}\n",
            self.e2e_events_per_s,
            self.e2e_events,
            self.e2e_time.as_secs_f64(),
            self.e2e_commits_per_event,
            self.ledger_mode(),
            self.floor_events_per_s,
            self.floor_commits_per_event,
            self.ratio()
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
             | ratio end to end / floor | {:.2} |\n\
             | commits per event, end to end | {:.2} |\n\
             | commits per event, floor | {:.3} |\n\n\
             Commits: every transaction the bench database committed (`pg_stat_database`), \
             read-only ones included.\n",
            self.e2e_events_per_s,
            self.e2e_events,
            self.e2e_time.as_secs_f64(),
            self.ledger_mode(),
            self.floor_events_per_s,
            self.ratio(),
            self.e2e_commits_per_event,
            self.floor_commits_per_event,
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

/// A duration in milliseconds.
pub(super) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1_000.0
}
