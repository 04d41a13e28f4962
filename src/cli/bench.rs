//! `tasklatch bench`: end-to-end throughput against the SQL floor, claim latency at a million
//! rows, throughput under an old snapshot; the library is `tasklatch_load::bench`.

use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use tasklatch_load::bench::{run, BenchConfig};

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
    #[arg(long, default_value = "reports/bench.md")]
    out: PathBuf,
    /// Run the end-to-end part with one ledger transaction per launch and per lookup instead of
    /// coalescing concurrent calls (to measure what coalescing buys).
    #[arg(long)]
    per_call_ledger: bool,
}

/// Runs the benchmark and writes the report.
pub fn run_cli(args: BenchArgs) -> anyhow::Result<ExitCode> {
    let command = std::iter::once("tasklatch".to_owned())
        .chain(std::env::args().skip(1).map(|a| {
            if a.contains("://") {
                "<url>".to_owned()
            } else {
                a
            }
        }))
        .collect::<Vec<_>>()
        .join(" ");
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
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let report = runtime.block_on(run(config, |line| eprintln!("{line}")))?;
    print!("{}", report.summary());
    if let Some(dir) = args.out.parent() {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir)?;
        }
    }
    std::fs::write(&args.out, report.markdown(&command))?;
    eprintln!("wrote {}", args.out.display());
    Ok(ExitCode::SUCCESS)
}
