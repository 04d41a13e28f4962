//! What a finished shrink leaves behind: the minimal plan in a file, optionally a regression
//! fixture, and the lines that tell the user what shrank and how to replay it.

use super::ShrinkResult;
use crate::campaign::fixture::Fixture;
use std::path::{Path, PathBuf};
use tasklatch_core::mutation::Mutant;

impl ShrinkResult {
    /// Where the minimal plan goes unless the user says: `shrunk-<seed>.json`.
    pub fn default_path(&self) -> PathBuf {
        format!("shrunk-{}.json", self.original.seed).into()
    }

    /// Writes the minimal plan as pretty JSON.
    pub fn write_plan(&self, path: &Path) -> Result<(), String> {
        std::fs::write(path, self.plan.to_json() + "\n")
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    /// The minimal plan, its size against the original, and what it fails with.
    pub fn lines(&self) -> Vec<String> {
        let (from, to) = (&self.original, &self.plan);
        vec![
            to.to_json(),
            format!(
                "shrunk in {} runs: faults {} -> {}, tasks {} -> {}, user actions {} -> {}, workers {} -> {}",
                self.runs,
                from.faults.len(),
                to.faults.len(),
                from.tasks.len(),
                to.tasks.len(),
                from.user.len(),
                to.user.len(),
                from.workers,
                to.workers
            ),
            format!(
                "fails with: {} ({})",
                self.fingerprint.invariant, self.fingerprint.shape
            ),
        ]
    }

    /// Saves the minimal plan as the regression fixture `name` (caught under `mutant`, if
    /// the failure needs one) and returns its path.
    pub fn save_fixture(&self, name: &str, mutant: Option<Mutant>) -> Result<PathBuf, String> {
        let fixture = Fixture {
            description: format!(
                "shrunk from seed {}: {} ({})",
                self.original.seed, self.fingerprint.invariant, self.fingerprint.shape
            ),
            mutant: mutant.map(|m| m.to_string()),
            invariant: Some(self.fingerprint.invariant.to_string()),
            plan: self.plan.clone(),
        };
        let path = Fixture::path(name);
        fixture.write(&path)?;
        Ok(path)
    }
}
