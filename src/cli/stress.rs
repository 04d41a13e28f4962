//! `tasklatch stress`: W engines against one Postgres, with fault-injecting doubles and
//! optional chaos; the library is `tasklatch_load::stress`.

use clap::Args;
use std::process::ExitCode;
use std::time::Duration;
use tasklatch_load::stress::{run, StressConfig};

/// Arguments of `tasklatch stress`.
#[derive(Args)]
pub struct StressArgs {
    /// Engines running concurrently.
    #[arg(long, default_value_t = 8)]
    workers: usize,
    /// Tasks to submit.
    #[arg(long, default_value_t = 10_000)]
    tasks: u32,
    /// Abort engines mid-call and kill backend connections while faults are on.
    #[arg(long)]
    chaos: bool,
    /// Use this database (migrated if needed; nothing is deleted) instead of a fresh one.
    #[arg(long)]
    database_url: Option<String>,
    /// Seeds scripts, faults and chaos.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Give up waiting for everything to settle after this many seconds.
    #[arg(long, default_value_t = 600)]
    deadline_secs: u64,
}

/// Runs the stress test; exit code 1 when anything was lost, duplicated or unexpected.
pub fn run_cli(args: StressArgs) -> anyhow::Result<ExitCode> {
    let mut config = StressConfig::new(args.workers, args.tasks);
    config.chaos = args.chaos;
    config.database_url = args.database_url;
    config.seed = args.seed;
    config.deadline = Duration::from_secs(args.deadline_secs);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let report = runtime.block_on(run(config, |p| eprintln!("{}", p.line())))?;
    eprintln!(
        "tasks={} runs={} aborts={} kills={} restarts={} deleted_threads={} cancels={} settled={} elapsed={:.1}s\nlauncher: {}",
        report.tasks,
        report.runs,
        report.aborts,
        report.kills,
        report.restarts,
        report.deleted_threads,
        report.cancels,
        report.settled,
        report.elapsed.as_secs_f64(),
        report.launcher
    );
    for e in &report.verdict.examples {
        eprintln!("  {e}");
    }
    println!("{}", report.line());
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
