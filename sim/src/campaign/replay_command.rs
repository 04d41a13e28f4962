//! The shell command that replays a run: what a failing campaign seed, a summary and a shrink
//! print, so a failure found anywhere is one copy-paste away.

use crate::plan::gateway_mode::GatewayMode;
use serde::{Deserialize, Serialize};
use std::path::Path;
use tasklatch_core::mutation::Mutant;

/// How the run to replay was set up: store, command-line knobs and planted bug.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayCommand {
    /// The run used Postgres (`--store pg`).
    pub postgres: bool,
    /// Workers fixed on the command line.
    pub workers: Option<u32>,
    /// Tasks fixed on the command line.
    pub tasks: Option<u32>,
    /// The planted bug switched on.
    pub mutant: Option<Mutant>,
    /// The gateway mode fixed on the command line.
    pub gateway: GatewayMode,
}

impl ReplayCommand {
    /// The command that replays seed `seed`.
    pub fn seed(&self, seed: u64) -> String {
        let mut cmd = format!("{} --seed {seed}", self.program());
        self.push_store(&mut cmd);
        if let Some(w) = self.workers {
            cmd.push_str(&format!(" --workers {w}"));
        }
        if let Some(t) = self.tasks {
            cmd.push_str(&format!(" --tasks {t}"));
        }
        if !self.gateway.is_ledger() {
            cmd.push_str(&format!(" --gateway {}", self.gateway));
        }
        self.push_mutant(&mut cmd);
        cmd
    }

    /// The command that replays the plan file at `path` (a plan fixes workers and tasks).
    pub fn plan(&self, path: &Path) -> String {
        let mut cmd = format!("{} --plan {}", self.program(), path.display());
        self.push_store(&mut cmd);
        self.push_mutant(&mut cmd);
        cmd
    }

    /// A planted bug needs a build with the mutations feature.
    fn program(&self) -> &'static str {
        if self.mutant.is_some() {
            "cargo run --release --features mutations -- sim"
        } else {
            "tasklatch sim"
        }
    }

    fn push_store(&self, cmd: &mut String) {
        if self.postgres {
            cmd.push_str(" --store pg");
        }
    }

    fn push_mutant(&self, cmd: &mut String) {
        if let Some(m) = self.mutant {
            cmd.push_str(&format!(" --mutant {m}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_carry_store_knobs_and_mutant() {
        let plain = ReplayCommand::default();
        assert_eq!(plain.seed(7), "tasklatch sim --seed 7");
        let full = ReplayCommand {
            postgres: true,
            workers: Some(2),
            tasks: Some(9),
            mutant: Some(Mutant::ALL[0]),
            gateway: GatewayMode::Ledger,
        };
        assert_eq!(
            full.seed(7),
            format!(
                "cargo run --release --features mutations -- sim --seed 7 --store pg --workers 2 --tasks 9 --mutant {}",
                Mutant::ALL[0]
            )
        );
        assert_eq!(
            full.plan(Path::new("p.json")),
            format!(
                "cargo run --release --features mutations -- sim --plan p.json --store pg --mutant {}",
                Mutant::ALL[0]
            )
        );
    }
}
