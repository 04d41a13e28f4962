//! `tasklatch`: the command line. Thin: every command parses its arguments and calls a library.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod cli;

/// Durable task notifications: never lost, never duplicated, never noisy.
#[derive(Parser)]
#[command(name = "tasklatch", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a deterministic simulation campaign, or replay one seed.
    Sim(cli::sim::SimArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Sim(args) => cli::sim::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
