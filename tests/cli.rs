//! The command line as a user meets it: every subcommand explains itself, and bad input —
//! a malformed plan, fixture or trace file, a bad seed range — ends with a clear error that
//! names the line and the field, a non-zero exit and never a panic.

use std::path::PathBuf;
use std::process::{Command, Output};

fn tasklatch(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tasklatch"))
        .args(args)
        .output()
        .expect("run the tasklatch binary")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A scratch file, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str, text: &str) -> Scratch {
        let path =
            std::env::temp_dir().join(format!("tasklatch-cli-{}-{name}", std::process::id()));
        std::fs::write(&path, text).expect("write a scratch file");
        Scratch(path)
    }
    fn arg(&self) -> &str {
        self.0.to_str().expect("utf-8 temp path")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Refused cleanly: exit code 2 or 1, a one-line reason on stderr, no panic.
fn assert_refused(out: &Output, must_contain: &[&str]) {
    let err = stderr(out);
    assert!(!out.status.success(), "accepted bad input: {err}");
    assert!(!err.contains("panicked"), "panicked: {err}");
    for needle in must_contain {
        assert!(err.contains(needle), "expected {needle:?} in: {err}");
    }
}

#[test]
fn every_subcommand_explains_itself() {
    for sub in ["sim", "stress", "bench", "migrate"] {
        let out = tasklatch(&[sub, "--help"]);
        assert!(
            out.status.success(),
            "{sub} --help failed: {}",
            stderr(&out)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("Usage: tasklatch"), "{sub}: {text}");
        assert!(text.contains("--"), "{sub} lists no options: {text}");
    }
}

#[test]
fn a_plan_with_a_wrongly_typed_field_is_refused_with_line_and_field() {
    let plan = Scratch::new(
        "plan.json",
        "{\n  \"seed\": 1,\n  \"workers\": \"two\"\n}\n",
    );
    let out = tasklatch(&["sim", "--plan", plan.arg()]);
    assert_refused(&out, &["line 3", "field `workers`", "invalid type"]);
}

#[test]
fn a_plan_that_is_not_json_is_refused_with_its_position() {
    let plan = Scratch::new("garbage.json", "seed = 1\n");
    let out = tasklatch(&["sim", "--plan", plan.arg()]);
    assert_refused(&out, &["line 1, column"]);
}

#[test]
fn a_fixture_whose_plan_breaks_a_bound_is_refused_naming_the_field() {
    let fixture = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/regressions/lease-token-not-checked.json"),
    )
    .expect("read a fixture");
    let mut value: serde_json::Value = serde_json::from_str(&fixture).expect("fixture is JSON");
    value["plan"]["workers"] = serde_json::json!(0);
    let bad = Scratch::new("fixture.json", &value.to_string());
    let out = tasklatch(&["sim", "--plan", bad.arg()]);
    assert_refused(&out, &["field `workers`"]);
}

#[test]
fn a_trace_with_a_broken_line_is_refused_with_line_and_field() {
    let good = Scratch::new("good.jsonl", "");
    let out = tasklatch(&["sim", "--seed", "1", "--quiet", "--trace", good.arg()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&good.0).expect("read the trace");
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    assert!(lines.len() > 3, "trace too short");
    lines[2] = lines[2].replacen("\"at_us\":", "\"at_us\":\"soon\",\"was\":", 1);
    let bad = Scratch::new("bad.jsonl", &(lines.join("\n") + "\n"));
    let out = tasklatch(&["sim", "--replay-trace", bad.arg()]);
    assert_refused(&out, &["line 3", "at_us"]);
}

#[test]
fn a_replayed_trace_reproduces_its_history() {
    let trace = Scratch::new("replay.jsonl", "");
    let out = tasklatch(&["sim", "--seed", "2", "--quiet", "--trace", trace.arg()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = tasklatch(&["sim", "--replay-trace", trace.arg()]);
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(out.status.success(), "{all}");
    assert!(all.contains("reproduces the trace exactly"), "{all}");
}

#[test]
fn a_missing_file_and_a_bad_seed_range_are_refused() {
    let out = tasklatch(&["sim", "--plan", "/nonexistent/plan.json"]);
    assert_refused(&out, &["cannot read plan file", "/nonexistent/plan.json"]);
    let out = tasklatch(&["sim", "--seeds", "9..3"]);
    assert_refused(&out, &["9..3"]);
    let out = tasklatch(&["sim", "--seeds", "many"]);
    assert_refused(&out, &["expected A..B"]);
}

#[test]
fn a_campaign_writes_its_summary() {
    let summary = Scratch::new("summary.md", "");
    let out = tasklatch(&[
        "sim",
        "--seeds",
        "0..3",
        "--quiet",
        "--summary",
        summary.arg(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("3 passed, 0 failed"));
    let md = std::fs::read_to_string(&summary.0).expect("read the summary");
    for needle in [
        "Regenerate with",
        "seeds: 3 (3 passed, 0 failed)",
        "simulated seconds per wall second",
        "## Failures",
        "## Invariant counts",
        "| lost (latest event never delivered) | 0 |",
        "| duplicated deliveries | 0 |",
        "## Fault and feature coverage",
    ] {
        assert!(md.contains(needle), "{needle:?} missing from:\n{md}");
    }
}
