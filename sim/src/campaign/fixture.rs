//! Regression fixtures: minimal plans of bugs found (and of every planted mutant), replayed by
//! the test suite. A fixture must pass on the current engine; a fixture naming a mutant must
//! still catch it, with the same invariant, when the mutations feature is built.

use crate::plan::Plan;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

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

/// Where regression fixtures live, relative to the workspace root.
const DIR: &str = "fixtures/regressions";

impl Fixture {
    /// The path of the fixture called `name` (`fixtures/regressions/<name>.json`).
    pub fn path(name: &str) -> PathBuf {
        PathBuf::from(format!("{DIR}/{name}.json"))
    }

    /// Reads a fixture file; errors name the file, line and field.
    pub fn read(path: &Path) -> Result<Fixture, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let f: Fixture = crate::plan::json_input::parse(&text)
            .map_err(|e| format!("{}: {e}", path.display()))?;
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

/// Reads the plan to replay from `path`: a plan file, or a regression fixture (whose `plan`
/// field is replayed). Errors name the file, and the line and field at fault.
pub fn read_plan(path: &Path) -> Result<Plan, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read plan file {}: {e}", path.display()))?;
    let is_fixture =
        serde_json::from_str::<serde_json::Value>(&text).is_ok_and(|v| v.get("plan").is_some());
    if is_fixture {
        return Ok(Fixture::read(path)?.plan);
    }
    Plan::from_json(&text).map_err(|e| format!("plan file {}: {e}", path.display()))
}
