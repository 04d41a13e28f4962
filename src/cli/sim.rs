//! `tasklatch sim`.

use clap::Args;
use std::process::ExitCode;

/// Arguments of `tasklatch sim`.
#[derive(Args)]
pub struct SimArgs {}

/// Runs the simulation command.
pub fn run(_args: SimArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("the simulation is not built yet (issue: deterministic simulation testbed)")
}
