//! `tasklatch bench --latency`: notification latency with wake-ups versus poll-only.
//!
//! Latency is measured from just before a task is submitted (the submit writes the task with its
//! first event — the driver answers inline with a finished task — so a notification is due at
//! its commit) to the moment the agent runtime accepted the notification's run. The same load
//! runs twice, each time on a fresh database: **wake-ups** (the worker's lanes and its
//! `LISTEN tasklatch_wakeup` listener; the store's writes send the notification inside their
//! transaction) and **poll-only** (the same lanes, no listener: a lane passes once per tick).
//! Submits come from a separate engine (the API's role), one task per thread, at a steady rate,
//! so no run is ever busy and the number is the wake-up path alone. Both modes use the worker's
//! own [`Lane`](tasklatch_worker::lane::Lane) and listener, the real `PgStore` and `PgLedger`.

mod mode;
mod report;
mod stamps;

pub use report::{LatencyStats, WakeupReport};

use super::BenchError;
use std::time::Duration;

/// What to measure.
#[derive(Clone, Debug)]
pub struct WakeupConfig {
    /// Tasks submitted per mode.
    pub tasks: u32,
    /// Submits per second.
    pub rate: u32,
    /// Lanes (engines) of the worker.
    pub lanes: usize,
    /// The lanes' tick: the longest wait between passes (the worker's default is 1 s).
    pub tick: Duration,
    /// The server to create the bench databases on; `None`: the test harness's choice.
    pub server_url: Option<String>,
}

impl Default for WakeupConfig {
    fn default() -> Self {
        WakeupConfig {
            tasks: 300,
            rate: 50,
            lanes: 2,
            tick: Duration::from_secs(1),
            server_url: None,
        }
    }
}

/// Whether the lanes listen for wake-ups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Lanes pass on every wake-up notification, and at least once per tick.
    WakeUps,
    /// Lanes pass once per tick.
    PollOnly,
}

impl Mode {
    /// The mode's name in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::WakeUps => "wake-ups",
            Mode::PollOnly => "poll-only",
        }
    }
}

/// Runs both modes; `progress` gets a line per step.
pub async fn run(
    config: WakeupConfig,
    mut progress: impl FnMut(&str) + Send,
) -> Result<WakeupReport, BenchError> {
    if config.tasks == 0 || config.rate == 0 || config.lanes == 0 {
        return Err(BenchError(
            "tasks, rate and lanes must each be at least 1".into(),
        ));
    }
    let mut report = WakeupReport {
        config: config.clone(),
        modes: Vec::new(),
    };
    for m in [Mode::WakeUps, Mode::PollOnly] {
        progress(&format!(
            "{}: {} tasks at {}/s, {} lanes, tick {} ms",
            m.as_str(),
            config.tasks,
            config.rate,
            config.lanes,
            config.tick.as_millis()
        ));
        let stats = mode::measure(&config, m).await?;
        progress(&format!("{}: {}", m.as_str(), stats.line()));
        report.modes.push((m, stats));
    }
    Ok(report)
}
