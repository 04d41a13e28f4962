//! Campaign summaries: the lines a campaign prints (coverage, speed, one line per failing seed
//! with its replay command, `N passed, M failed`), and the Markdown file (`--summary`) with
//! what ran, what failed and how to replay it, fault coverage per kind, invariant counts and
//! speed — with the campaign's JSON record beside it (see [`crate::campaign::merge`]).

use crate::campaign::merge::{self, CampaignRecord};
use crate::campaign::replay_command::ReplayCommand;
use crate::campaign::CampaignReport;
use crate::check::Counts;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

/// What a campaign prints when it ends; the last line is `N passed, M failed`.
pub fn console(report: &CampaignReport, replay: &ReplayCommand) -> Vec<String> {
    let n = report.results.len();
    let wall = report.wall.as_secs_f64().max(1e-9);
    let mut lines = vec![
        "fault and feature coverage (seeds where it took effect; every mark, zeros included):"
            .to_owned(),
    ];
    for (kind, count) in report.coverage() {
        lines.push(format!(
            "  {kind:<36} {count:>6}  {:>5.1}%{}",
            100.0 * count as f64 / n.max(1) as f64,
            if kind.rare() { "  (rare)" } else { "" }
        ));
    }
    lines.push(format!(
        "speed: {:.0} simulated seconds per wall second, {:.2} seeds per second ({} seeds in {:.1} s)",
        report.sim_secs() / wall,
        n as f64 / wall,
        n,
        wall
    ));
    let failures: Vec<_> = report.failures().collect();
    for f in &failures {
        if let Some(v) = &f.violation {
            lines.push(format!(
                "FAILED seed {}: {v}\n  replay: {}",
                f.seed,
                replay.seed(f.seed)
            ));
        }
    }
    lines.push(format!(
        "{} passed, {} failed",
        n - failures.len(),
        failures.len()
    ));
    lines
}

/// Writes the Markdown summary of a campaign to `path` (see [`markdown`]) and its record
/// beside it ([`merge::record_path`]).
pub fn write(
    path: &Path,
    report: &CampaignReport,
    commands: &[String],
    replay: &ReplayCommand,
) -> Result<(), String> {
    std::fs::write(path, markdown(report, commands, replay))
        .map_err(|e| format!("cannot write summary {}: {e}", path.display()))?;
    let record = CampaignRecord {
        format: merge::FORMAT,
        command: commands.join("\n"),
        replay: replay.clone(),
        results: report.results.clone(),
        wall: report.wall,
    };
    merge::write(&merge::record_path(path), &record)
}

/// The Markdown summary of a campaign. `commands` are the command lines that ran it (one per
/// shard when merged); `replay` gives the replay command of a failing seed.
pub fn markdown(report: &CampaignReport, commands: &[String], replay: &ReplayCommand) -> String {
    let n = report.results.len();
    let failures: Vec<_> = report.failures().collect();
    let wall = report.wall.as_secs_f64().max(1e-9);
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# Simulation campaign\n\nRegenerate with:\n\n```sh\n{}\n```\n",
        commands.join("\n")
    );
    if commands.len() > 1 {
        let _ = writeln!(
            md,
            "Merged from {} shard records; the wall time below is their sum (machine time).\n",
            commands.len()
        );
    }
    let _ = writeln!(
        md,
        "- seeds: {n} ({} passed, {} failed)",
        n - failures.len(),
        failures.len()
    );
    let _ = writeln!(md, "- simulated time: {:.0} s in {:.1} s wall: **{:.0} simulated seconds per wall second**, {:.2} seeds per second", report.sim_secs(), wall, report.sim_secs() / wall, n as f64 / wall);
    let _ = writeln!(md);
    counts(&mut md, report);
    let mut invariants: BTreeMap<String, u64> = BTreeMap::new();
    for f in &failures {
        if let Some(v) = &f.violation {
            *invariants.entry(v.invariant.to_string()).or_default() += 1;
        }
    }
    let _ = writeln!(md, "## Failures\n");
    if failures.is_empty() {
        let _ = writeln!(md, "None.\n");
    } else {
        let _ = writeln!(md, "| invariant | seeds |\n|---|---|");
        for (inv, count) in &invariants {
            let _ = writeln!(md, "| {inv} | {count} |");
        }
        let _ = writeln!(md, "\n| seed | first violation | replay |\n|---|---|---|");
        for f in &failures {
            if let Some(v) = &f.violation {
                let _ = writeln!(
                    md,
                    "| {} | {} | `{}` |",
                    f.seed,
                    v.to_string().replace('|', "\\|"),
                    replay.seed(f.seed)
                );
            }
        }
        let _ = writeln!(md);
    }
    let _ = writeln!(md, "## Fault and feature coverage\n\nSeeds in which each fault kind or workload feature took effect; every mark is listed, zeros included. A rare mark may be missed by seeds 0..200.\n\n| kind | seeds | share | rare |\n|---|---|---|---|");
    for (kind, count) in report.coverage() {
        let _ = writeln!(
            md,
            "| {kind} | {count} | {:.1}% | {} |",
            100.0 * count as f64 / n.max(1) as f64,
            if kind.rare() { "yes" } else { "" }
        );
    }
    md
}

/// The checker's counts summed over every seed: what the campaign delivered and refused, and
/// how often each invariant broke.
fn counts(md: &mut String, report: &CampaignReport) {
    let sum = |f: fn(&Counts) -> u64| report.results.iter().map(|r| f(&r.counts)).sum::<u64>();
    let rows: [(&str, u64); 9] = [
        ("notifications delivered", sum(|c| c.delivered)),
        ("lost (latest event never delivered)", sum(|c| c.lost)),
        ("duplicated deliveries", sum(|c| c.duplicated)),
        ("unexpected runs", sum(|c| c.unexpected)),
        ("noisy runs", sum(|c| c.noisy)),
        (
            "fenced writes refused by the store",
            sum(|c| c.fenced_refused),
        ),
        (
            "dead letters: thread gone (404)",
            sum(|c| c.dead_thread_gone),
        ),
        ("dead letters: failure budget spent", sum(|c| c.dead_budget)),
        ("dead letters: cancel budget spent", sum(|c| c.dead_cancel)),
    ];
    let _ = writeln!(
        md,
        "## Invariant counts\n\nSummed over all seeds, as the checker counted them from the histories.\n\n| count | total |\n|---|---|"
    );
    for (what, total) in rows {
        let _ = writeln!(md, "| {what} | {total} |");
    }
    let _ = writeln!(md);
}
