//! `tasklatch bench`: end-to-end throughput against the SQL floor, claim latency at a million
//! rows, throughput under an old snapshot; with `--latency`, notification latency with wake-ups
//! versus poll-only; with `--panel`, how fast a change reaches open background-task panels and
//! what they cost the database. The library is `tasklatch_load::bench`.

use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tasklatch_load::bench::{panel, run, wakeup, BenchConfig};
use wakeup::WakeupConfig;

/// Where the throughput report goes by default.
const DEFAULT_OUT: &str = "reports/bench.md";

/// Arguments of `tasklatch bench`.
#[derive(Args)]
pub struct BenchArgs {
    /// Tasks delivered end to end (and through the floor).
    #[arg(long, default_value_t = 20_000)]
    tasks: u32,
    /// Engines / workers.
    #[arg(long, default_value_t = 4)]
    workers: usize,
    /// Claim batch size.
    #[arg(long, default_value_t = 64)]
    batch: usize,
    /// Rows in the table for the latency and snapshot parts.
    #[arg(long, default_value_t = 1_000_000)]
    rows: u64,
    /// Seconds the old snapshot is held.
    #[arg(long, default_value_t = 60)]
    snapshot_secs: u64,
    /// Server (admin URL) to create the bench database on; default: DATABASE_URL, the local
    /// server, or a throwaway cluster.
    #[arg(long)]
    database_url: Option<String>,
    /// Where to write the Markdown report.
    #[arg(long, default_value = DEFAULT_OUT)]
    out: PathBuf,
    /// Run the end-to-end part with one ledger transaction per launch and per lookup instead of
    /// coalescing concurrent calls (to measure what coalescing buys).
    #[arg(long)]
    per_call_ledger: bool,
    /// Measure only the notification latency instead (submit → run started), with the worker's
    /// lanes and wake-up listener versus the same lanes polling once per tick; writes
    /// `reports/bench-latency.md` unless `--out` says otherwise.
    #[arg(long)]
    latency: bool,
    /// With `--latency`: tasks submitted per mode.
    #[arg(long, default_value_t = 300, requires = "latency")]
    latency_tasks: u32,
    /// With `--latency`: submits per second.
    #[arg(long, default_value_t = 50, requires = "latency")]
    rate: u32,
    /// With `--latency`: the worker's lanes.
    #[arg(long, default_value_t = 2, requires = "latency")]
    lanes: usize,
    /// With `--latency`: the lanes' tick in milliseconds (the worker's default is 1000).
    #[arg(long, default_value_t = 1_000, requires = "latency")]
    tick_ms: u64,
    /// Measure only the background-task panel instead: change → open panel latency and the
    /// database's work with panels open versus none; writes `reports/bench-panel.md` unless
    /// `--out` says otherwise.
    #[arg(long, conflicts_with = "latency")]
    panel: bool,
    /// With `--panel`: panels open at once (one per owner and thread).
    #[arg(long, default_value_t = 100, requires = "panel")]
    panels: usize,
    /// With `--panel`: changes per phase (5 per second).
    #[arg(long, default_value_t = 100, requires = "panel")]
    changes: u32,
}

/// Runs the benchmark and writes the report.
pub fn run_cli(args: BenchArgs) -> anyhow::Result<ExitCode> {
    let command = command_line();
    if args.latency {
        return run_latency(args, &command);
    }
    if args.panel {
        return run_panel(args, &command);
    }
    run_throughput(args, &command)
}

/// `--latency`: wake-ups versus poll-only.
fn run_latency(args: BenchArgs, command: &str) -> anyhow::Result<ExitCode> {
    let config = WakeupConfig {
        tasks: args.latency_tasks,
        rate: args.rate,
        lanes: args.lanes,
        tick: std::time::Duration::from_millis(args.tick_ms),
        server_url: args.database_url,
    };
    let report = block_on(wakeup::run(config, |line| eprintln!("{line}")))??;
    print!("{}", report.summary());
    let out = out_or(args.out, "reports/bench-latency.md");
    write_report(&out, &report.markdown(command))?;
    Ok(ExitCode::SUCCESS)
}

/// `--panel`: the panel's push latency and database load.
fn run_panel(args: BenchArgs, command: &str) -> anyhow::Result<ExitCode> {
    let config = panel::PanelConfig {
        panels: args.panels,
        changes: args.changes,
        server_url: args.database_url,
        ..panel::PanelConfig::default()
    };
    let report = block_on(panel::run(config, |line| eprintln!("{line}")))??;
    print!("{}", report.summary());
    let out = out_or(args.out, "reports/bench-panel.md");
    write_report(&out, &report.markdown(command))?;
    Ok(ExitCode::SUCCESS)
}

/// Runs `work` to its end on a multi-threaded runtime.
fn block_on<F: std::future::Future>(work: F) -> anyhow::Result<F::Output> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    Ok(runtime.block_on(work))
}

/// `out`, unless it is the throughput report's default: then `default` (each mode its own file).
fn out_or(out: PathBuf, default: &str) -> PathBuf {
    if out == Path::new(DEFAULT_OUT) {
        PathBuf::from(default)
    } else {
        out
    }
}

fn write_report(out: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(dir) = out.parent() {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir)?;
        }
    }
    std::fs::write(out, text)?;
    eprintln!("wrote {}", out.display());
    Ok(())
}

/// The command line as run, with URLs hidden (they may carry a password).
fn command_line() -> String {
    std::iter::once("tasklatch".to_owned())
        .chain(std::env::args().skip(1).map(|a| {
            if a.contains("://") {
                "<url>".to_owned()
            } else {
                a
            }
        }))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The throughput bench (parts 1 to 4).
fn run_throughput(args: BenchArgs, command: &str) -> anyhow::Result<ExitCode> {
    let config = BenchConfig {
        tasks: args.tasks,
        workers: args.workers,
        batch: args.batch,
        rows: args.rows,
        snapshot_secs: args.snapshot_secs,
        server_url: args.database_url,
        ledger: if args.per_call_ledger {
            None
        } else {
            BenchConfig::default().ledger
        },
        ..BenchConfig::default()
    };
    let report = block_on(run(config, |line| eprintln!("{line}")))??;
    print!("{}", report.summary());
    write_report(&args.out, &report.markdown(command))?;
    Ok(ExitCode::SUCCESS)
}
