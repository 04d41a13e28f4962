//! `tasklatch worker`: the process operators run (`tasklatch_worker`), and `tasklatch worker
//! hash-token`, which prints the SHA-256 a token is configured as.

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use std::io::BufRead;
use std::path::PathBuf;
use std::process::ExitCode;
use tasklatch_worker::logging::{self, LogFormat};

/// Arguments of `tasklatch worker`.
#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct WorkerArgs {
    #[command(subcommand)]
    command: Option<WorkerCommand>,
    /// The configuration file (see tasklatch.example.toml).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Log lines as text or as JSON objects (filtered by RUST_LOG, default info).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    log_format: Format,
}

#[derive(Subcommand)]
enum WorkerCommand {
    /// Print sha256(token), the form [auth] tokens holds: reads one token from standard input,
    /// or makes a new random one with --new (printed first, then its hash).
    #[command(after_help = "Examples:\n  \
        tasklatch worker hash-token --new                      # a new token (tl_…), then its sha256\n  \
        printf '%s\\n' \"$TOKEN\" | tasklatch worker hash-token   # the sha256 of $TOKEN\n\n\
        In the configuration file, with the owner the token acts as:\n  \
        [auth]\n  \
        tokens = [{ owner = \"alice\", sha256 = \"<the sha256 printed>\" }]\n\
        or, to keep it out of the file, sha256 = \"env:TASKLATCH_TOKEN_ALICE_SHA256\" with the\n\
        sha256 in that environment variable.")]
    HashToken {
        /// Make a new random token instead of reading one.
        #[arg(long)]
        new: bool,
    },
}

#[derive(Copy, Clone, ValueEnum)]
enum Format {
    Text,
    Json,
}

/// Runs the worker until SIGTERM/SIGINT, or hashes a token.
pub fn run_cli(args: WorkerArgs) -> anyhow::Result<ExitCode> {
    if let Some(WorkerCommand::HashToken { new }) = args.command {
        return hash_token(new);
    }
    let path = args
        .config
        .context("--config FILE is required (see tasklatch.example.toml)")?;
    logging::init(match args.log_format {
        Format::Text => LogFormat::Text,
        Format::Json => LogFormat::Json,
    });
    let settings = tasklatch_worker::config::load(&path, &|k| std::env::var(k).ok())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(tasklatch_worker::run(settings))?;
    Ok(ExitCode::SUCCESS)
}

fn hash_token(new: bool) -> anyhow::Result<ExitCode> {
    let token = if new {
        let token = tasklatch_worker::token::new_token()?;
        println!("{token}");
        token
    } else {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)?;
        let token = line.trim().to_owned();
        anyhow::ensure!(!token.is_empty(), "no token on standard input");
        token
    };
    println!("{}", tasklatch_worker::token::hash_token(&token));
    Ok(ExitCode::SUCCESS)
}
