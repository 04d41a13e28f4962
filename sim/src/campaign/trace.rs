//! Trace files: the history as JSON lines (`--trace`), read back for a replay.
//!
//! Field names are stable: `at_us` (simulated µs since the start), `host`, `task` (`task-{n}` or
//! null), `kind`, and `payload` (absent for kinds without one). The first line is the `plan`.

use crate::history::{history_hash, trace_lines, Entry, Seen};
use crate::plan::Plan;
use std::path::Path;

/// Writes `entries` as a trace file.
pub fn write(path: &Path, entries: &[Entry]) -> std::io::Result<()> {
    let mut text = String::new();
    for line in trace_lines(entries) {
        text.push_str(&line);
        text.push('\n');
    }
    std::fs::write(path, text)
}

/// A trace read back: its entries, its plan and its history hash.
pub struct Trace {
    /// Every entry.
    pub entries: Vec<Entry>,
    /// The plan the run followed.
    pub plan: Plan,
    /// The history hash of the recorded entries.
    pub hash: String,
}

/// Reads a trace file; a malformed file is an error naming the line and the field.
pub fn read(path: &Path) -> Result<Trace, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read trace {}: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("trace {}: {e}", path.display()))
}

/// Parses trace text (see [`read`]).
pub fn parse(text: &str) -> Result<Trace, String> {
    let mut entries = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let entry: Entry = crate::plan::json_input::parse(line)
            // Each line is parsed on its own, so the parser's line is always 1: say the file's.
            .map_err(|e| format!("line {}, {}", i + 1, e.trim_start_matches("line 1, ")))?;
        entries.push(entry);
    }
    let plan = match entries.first().map(|e| &e.event) {
        Some(Seen::Plan { plan }) => (**plan).clone(),
        Some(_) => {
            return Err("line 1: field `kind`: the first line must be the `plan` entry".into())
        }
        None => return Err("the trace is empty".into()),
    };
    plan.check().map_err(|e| format!("line 1: plan: {e}"))?;
    let hash = history_hash(&entries);
    Ok(Trace {
        entries,
        plan,
        hash,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_lines_name_the_line_and_the_field() {
        let err = parse("{\"at_us\":0}\n").err().unwrap_or_default();
        assert!(
            err.starts_with("line 1, column") && err.contains("host"),
            "{err}"
        );
        let err = parse("{\"at_us\":0,\"host\":\"world\",\"task\":null,\"kind\":\"phase\",\"payload\":{\"name\":\"x\"}}\n").err().unwrap_or_default();
        assert!(err.contains("first line must be the `plan`"), "{err}");
        let err = parse("").err().unwrap_or_default();
        assert!(err.contains("empty"), "{err}");
        let err = parse("not json\n").err().unwrap_or_default();
        assert!(err.starts_with("line 1, column"), "{err}");
    }
}
