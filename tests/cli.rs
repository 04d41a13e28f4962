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
    let text = stdout(&out);
    assert!(text.starts_with(
        "fault and feature coverage (seeds where it took effect; every mark, zeros included):\n"
    ));
    assert!(
        text.contains("launcher_rollback_newer_run") && text.contains("(rare)"),
        "every mark is listed, zeros and rare ones too: {text}"
    );
    assert!(text.contains("\nspeed: "), "{text}");
    assert!(text.ends_with("\n3 passed, 0 failed\n"), "{text}");
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
        "| launcher_rollback_newer_run | 0 | 0.0% | yes |",
    ] {
        assert!(md.contains(needle), "{needle:?} missing from:\n{md}");
    }
}

#[test]
fn shards_split_a_campaign_and_their_records_merge_into_its_summary() {
    let mds = [Scratch::new("s1.md", ""), Scratch::new("s2.md", "")];
    let records = [Scratch::new("s1.json", ""), Scratch::new("s2.json", "")];
    let (whole, whole_record) = (Scratch::new("whole.md", ""), Scratch::new("whole.json", ""));
    let (merged, merged_record) = (Scratch::new("m.md", ""), Scratch::new("m.json", ""));
    for (shard, md, passed) in [("1/2", &mds[0], 2), ("2/2", &mds[1], 3)] {
        let args = [
            "sim",
            "--seeds",
            "0..5",
            "--shard",
            shard,
            "--quiet",
            "--summary",
        ];
        let out = tasklatch(&[&args[..], &[md.arg()]].concat());
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(
            stdout(&out).ends_with(&format!("\n{passed} passed, 0 failed\n")),
            "{shard}: {}",
            stdout(&out)
        );
    }
    let out = tasklatch(&[
        "sim",
        "--merge-summaries",
        records[0].arg(),
        records[1].arg(),
        "--summary",
        merged.arg(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).ends_with("\n5 passed, 0 failed\n"),
        "{}",
        stdout(&out)
    );
    let out = tasklatch(&[
        "sim",
        "--seeds",
        "0..5",
        "--quiet",
        "--summary",
        whole.arg(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let read = |s: &Scratch| std::fs::read_to_string(&s.0).expect("read a summary");
    let (merged_md, whole_md) = (read(&merged), read(&whole));
    for needle in [
        "seeds: 5 (5 passed, 0 failed)",
        "--shard 1/2",
        "--shard 2/2",
        "Merged from 2 shard records",
    ] {
        assert!(
            merged_md.contains(needle),
            "{needle:?} missing from:\n{merged_md}"
        );
    }
    // Everything the seeds decide (counts, failures, coverage) is what one machine finds.
    let decided = |md: &str| md[md.find("## Invariant counts").expect("sections")..].to_owned();
    assert_eq!(decided(&merged_md), decided(&whole_md));
    assert!(merged_record.0.exists() && whole_record.0.exists());

    let out = tasklatch(&[
        "sim",
        "--merge-summaries",
        records[0].arg(),
        records[0].arg(),
    ]);
    assert_refused(&out, &["seed 0 is in both", "must not overlap"]);
    let out = tasklatch(&["sim", "--merge-summaries", mds[0].arg()]);
    assert_refused(&out, &["s1.md", "line 1"]);
    let out = tasklatch(&["sim", "--seeds", "0..5", "--shard", "3/2"]);
    assert_refused(&out, &["expected K/N"]);
    let out = tasklatch(&["sim", "--seeds", "0..1", "--shard", "1/2"]);
    assert_refused(&out, &["holds no seed"]);
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_replay_writes_its_files_and_ends_with_the_history_hash() {
    let (trace, report) = (Scratch::new("t3.jsonl", ""), Scratch::new("r3.html", ""));
    let out = tasklatch(&[
        "sim",
        "--seed",
        "3",
        "--quiet",
        "--print-plan",
        "--trace",
        trace.arg(),
        "--report",
        report.arg(),
    ]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.first(), Some(&"{"), "the plan comes first: {text}");
    let events = std::fs::read_to_string(&trace.0)
        .expect("read the trace")
        .lines()
        .count();
    let wanted = format!("trace: {} ({events} events)", trace.arg());
    assert!(lines.contains(&wanted.as_str()), "{wanted:?} in {text}");
    let wanted = format!("report: {}", report.arg());
    assert!(lines.contains(&wanted.as_str()), "{wanted:?} in {text}");
    assert!(lines.iter().any(|l| l.starts_with("seed 3: ")), "{text}");
    assert!(lines.iter().any(|l| l.starts_with("delivered=")), "{text}");
    assert_eq!(lines[lines.len() - 2], "passed");
    let hash = lines[lines.len() - 1]
        .strip_prefix("history sha256: ")
        .expect("the last line is the hash");
    assert_eq!(hash.len(), 64, "{hash}");
    let html = std::fs::read_to_string(&report.0).expect("read the report");
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains(hash));
}

#[test]
fn shrinking_a_passing_plan_is_refused() {
    let out = tasklatch(&["sim", "--seed", "3", "--shrink", "--quiet"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_refused(&out, &["the plan passes: there is no failure to shrink"]);
}

#[cfg(not(feature = "mutations"))]
#[test]
fn planted_bugs_need_the_mutations_build() {
    let out = tasklatch(&["sim", "--seed", "1", "--mutant", "busy-counted-as-failure"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_refused(&out, &["`mutations` feature"]);
}

/// With a planted bug: a failing campaign prints each failing seed with the command that
/// replays it, and exits non-zero.
#[cfg(feature = "mutations")]
#[test]
fn a_failing_campaign_prints_the_replay_command_of_each_failure() {
    let out = tasklatch(&[
        "sim",
        "--seeds",
        "0..2",
        "--quiet",
        "--workers",
        "2",
        "--mutant",
        "unavailability-counted",
    ]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    let lines: Vec<&str> = text.lines().collect();
    let failed: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].starts_with("FAILED seed "))
        .collect();
    assert!(!failed.is_empty(), "the planted bug is caught: {text}");
    for i in failed {
        let seed = lines[i]["FAILED seed ".len()..]
            .split(':')
            .next()
            .unwrap_or_default();
        let replay = format!("  replay: cargo run --release --features mutations -- sim --seed {seed} --workers 2 --mutant unavailability-counted");
        assert_eq!(lines.get(i + 1), Some(&replay.as_str()), "{text}");
    }
    assert!(text.ends_with(" failed\n"), "{text}");
}

/// With a planted bug: shrinking writes the minimal plan and the fixture where asked, and
/// prints the plan, its size, the failure and the command that replays exactly that plan.
#[cfg(feature = "mutations")]
#[test]
fn a_shrink_writes_the_plan_and_the_fixture_and_prints_the_replay_command() {
    let dir = std::env::temp_dir().join(format!("tasklatch-cli-{}-shrink", std::process::id()));
    std::fs::create_dir_all(dir.join("fixtures/regressions")).expect("scratch directory");
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/regressions/busy-counted-as-failure.json");
    let out = Command::new(env!("CARGO_BIN_EXE_tasklatch"))
        .current_dir(&dir)
        .args(["sim", "--plan"])
        .arg(&fixture)
        .args([
            "--mutant",
            "busy-counted-as-failure",
            "--shrink",
            "--shrink-runs",
            "4",
        ])
        .args(["--threads", "2", "--quiet", "--shrink-out", "small.json"])
        .args(["--save-fixture", "again"])
        .output()
        .expect("run the tasklatch binary");
    let text = stdout(&out);
    let written = (
        std::fs::read_to_string(dir.join("small.json")),
        std::fs::read_to_string(dir.join("fixtures/regressions/again.json")),
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    let lines: Vec<&str> = text.lines().collect();
    let replay = "replay: cargo run --release --features mutations -- sim --plan small.json --mutant busy-counted-as-failure";
    assert_eq!(lines.last(), Some(&replay), "{text}");
    assert!(
        lines.contains(&"fixture: fixtures/regressions/again.json"),
        "{text}"
    );
    assert!(lines.contains(&"fails with: lost (final state `completed` never delivered (the last delivery carries an older state))"), "{text}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("shrunk in 4 runs: faults ")),
        "{text}"
    );
    let (plan, saved) = (
        written.0.expect("the plan file"),
        written.1.expect("the fixture"),
    );
    assert!(text.starts_with(&plan), "the printed plan is the file's");
    assert!(
        saved.contains("\"mutant\": \"busy-counted-as-failure\""),
        "{saved}"
    );
}

/// `--version` names the commit the binary was built from (`worker/build.rs`): the checkout's
/// `HEAD` when the build ran in one, as here.
#[test]
fn version_names_the_commit() {
    let out = tasklatch(&["--version"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("git runs");
    assert!(head.status.success(), "the tests run in a git checkout");
    let head = String::from_utf8_lossy(&head.stdout).trim().to_owned();
    let want = format!("tasklatch {} (commit {head})", env!("CARGO_PKG_VERSION"));
    assert_eq!(text.trim(), want);
}
