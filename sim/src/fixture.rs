//! Regression fixtures: minimal plans of bugs found (and of every planted mutant), replayed by
//! the test suite. A fixture must pass on the current engine; a fixture naming a mutant must
//! still catch it, with the same invariant, when the mutations feature is built.

use crate::plan::Plan;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One regression fixture file.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fixture {
    /// What bug this plan found, in a sentence.
    pub description: String,
    /// The planted bug it catches (`--mutant` spelling), if it is a mutant's plan.
    pub mutant: Option<String>,
    /// The invariant the plan breaks under that mutant.
    pub invariant: Option<String>,
    /// The minimal plan.
    pub plan: Plan,
}

impl Fixture {
    /// Reads a fixture file; errors name the file, line and field.
    pub fn read(path: &Path) -> Result<Fixture, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let f: Fixture =
            crate::json_input::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        f.plan
            .check()
            .map_err(|e| format!("{}: plan: {e}", path.display()))?;
        Ok(f)
    }

    /// Writes the fixture as pretty JSON.
    pub fn write(&self, path: &Path) -> Result<(), String> {
        let text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())? + "\n";
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    }
}
