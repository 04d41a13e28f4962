//! The wake-up latency bench's figures: percentiles per mode, and the report.

use super::{Mode, WakeupConfig};
use std::fmt::Write;
use std::time::Duration;

/// The goal of the worker issue: p99 with wake-ups at most this.
const GOAL_P99: Duration = Duration::from_millis(50);

/// Submit → run start over one mode's tasks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LatencyStats {
    /// Tasks measured.
    pub samples: usize,
    /// Median (nearest rank).
    pub p50: Duration,
    /// 99th percentile (nearest rank).
    pub p99: Duration,
    /// The slowest.
    pub max: Duration,
    /// The mean.
    pub mean: Duration,
}

impl LatencyStats {
    /// The figures of `samples` (all zero when there are none).
    pub fn of(mut samples: Vec<Duration>) -> Self {
        samples.sort();
        let n = samples.len();
        if n == 0 {
            return LatencyStats::default();
        }
        let rank = |p: f64| samples[((p * n as f64).ceil() as usize).clamp(1, n) - 1];
        LatencyStats {
            samples: n,
            p50: rank(0.50),
            p99: rank(0.99),
            max: samples[n - 1],
            mean: samples.iter().sum::<Duration>() / u32::try_from(n).unwrap_or(u32::MAX),
        }
    }

    /// One line: p50, p99, max, mean in milliseconds.
    pub fn line(&self) -> String {
        format!(
            "p50 {} ms, p99 {} ms, max {} ms, mean {} ms over {} tasks",
            ms(self.p50),
            ms(self.p99),
            ms(self.max),
            ms(self.mean),
            self.samples
        )
    }
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e3)
}

/// Both modes' figures.
#[derive(Clone, Debug)]
pub struct WakeupReport {
    /// What was run.
    pub config: WakeupConfig,
    /// Each mode's figures, wake-ups first.
    pub modes: Vec<(Mode, LatencyStats)>,
}

impl WakeupReport {
    fn stats(&self, mode: Mode) -> Option<&LatencyStats> {
        self.modes.iter().find(|(m, _)| *m == mode).map(|(_, s)| s)
    }

    /// The terminal summary: one line per mode, the ratio, and the goal.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        for (m, s) in &self.modes {
            let _ = writeln!(out, "{:<10} {}", m.as_str(), s.line());
        }
        if let (Some(w), Some(p)) = (self.stats(Mode::WakeUps), self.stats(Mode::PollOnly)) {
            let ratio = |a: Duration, b: Duration| b.as_secs_f64() / a.as_secs_f64().max(1e-9);
            let _ = writeln!(
                out,
                "poll-only / wake-ups: p50 x{:.0}, p99 x{:.0}; goal p99 <= {} ms with wake-ups: {}",
                ratio(w.p50, p.p50),
                ratio(w.p99, p.p99),
                GOAL_P99.as_millis(),
                if w.p99 <= GOAL_P99 { "met" } else { "NOT met" }
            );
        }
        out
    }

    /// The Markdown report, naming the command that produced it.
    pub fn markdown(&self, command: &str) -> String {
        let c = &self.config;
        let mut out = String::from("# Notification latency: wake-ups vs poll-only\n\n");
        let _ = writeln!(out, "Command: `{command}`\n");
        let _ = writeln!(
            out,
            "{} tasks per mode at {}/s, {} lanes, tick {} ms, each mode on a fresh database. \
             Latency: from just before the submit (which writes the task with its first event, \
             a notification due at its commit) to the agent runtime accepting the run.\n",
            c.tasks,
            c.rate,
            c.lanes,
            c.tick.as_millis()
        );
        out.push_str(
            "| mode | tasks | p50 ms | p99 ms | max ms | mean ms |\n|---|---|---|---|---|---|\n",
        );
        for (m, s) in &self.modes {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                m.as_str(),
                s.samples,
                ms(s.p50),
                ms(s.p99),
                ms(s.max),
                ms(s.mean)
            );
        }
        let _ = writeln!(out, "\n```\n{}```", self.summary());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let s = LatencyStats::of((1..=100).rev().map(Duration::from_millis).collect());
        assert_eq!(s.p50, Duration::from_millis(50));
        assert_eq!(s.p99, Duration::from_millis(99));
        assert_eq!(s.max, Duration::from_millis(100));
        assert_eq!(s.samples, 100);
        assert_eq!(LatencyStats::of(Vec::new()), LatencyStats::default());
        let one = LatencyStats::of(vec![Duration::from_millis(7)]);
        assert_eq!(
            (one.p50, one.p99),
            (Duration::from_millis(7), Duration::from_millis(7))
        );
    }
}
