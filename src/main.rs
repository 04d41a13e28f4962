//! `tasklatch`: the command line. Thin: every command parses its arguments and calls a library.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod cli;

/// Durable task notifications: never lost, never duplicated, never noisy.
#[derive(Parser)]
#[command(name = "tasklatch", version = tasklatch_worker::build_info::VERSION_LINE, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a deterministic simulation campaign, or replay one seed.
    Sim(cli::sim::SimArgs),
    /// Run W engines against one Postgres with fault-injecting doubles (and chaos).
    Stress(cli::stress::StressArgs),
    /// Measure end-to-end throughput against the SQL floor, claim latency, old snapshots.
    Bench(cli::bench::BenchArgs),
    /// Apply the Postgres schema.
    Migrate(cli::migrate::MigrateArgs),
    /// Run the worker: the loops on Postgres, the HTTP API, metrics (see tasklatch.example.toml).
    Worker(cli::worker::WorkerArgs),
    /// Operator views of one owner's tasks in one thread: list, show, cancel.
    Tasks(cli::tasks::TasksArgs),
    /// Operator view of dead letters (notification and cancel) and their requeue.
    DeadLetters(cli::tasks::DeadLettersArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Sim(args) => cli::sim::run(args),
        Command::Stress(args) => cli::stress::run_cli(args),
        Command::Bench(args) => cli::bench::run_cli(args),
        Command::Migrate(args) => cli::migrate::run_cli(args),
        Command::Worker(args) => cli::worker::run_cli(args),
        Command::Tasks(args) => cli::tasks::run_tasks(args),
        Command::DeadLetters(args) => cli::tasks::run_dead_letters(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
