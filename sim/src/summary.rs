//! Campaign summaries in Markdown (`--summary`): what ran, what failed and how to replay it,
//! fault coverage per kind, invariant counts and speed.

use crate::campaign::CampaignReport;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The Markdown summary of a campaign. `command` is the command line that ran it; `replay`
/// gives the replay command of a failing seed.
pub fn markdown(report: &CampaignReport, command: &str, replay: &dyn Fn(u64) -> String) -> String {
    let n = report.results.len();
    let failures: Vec<_> = report.failures().collect();
    let wall = report.wall.as_secs_f64().max(1e-9);
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# Simulation campaign\n\nRegenerate with:\n\n```sh\n{command}\n```\n"
    );
    let _ = writeln!(
        md,
        "- seeds: {n} ({} passed, {} failed)",
        n - failures.len(),
        failures.len()
    );
    let _ = writeln!(md, "- simulated time: {:.0} s in {:.1} s wall: **{:.0} simulated seconds per wall second**, {:.2} seeds per second", report.sim_secs(), wall, report.sim_secs() / wall, n as f64 / wall);
    let delivered: u64 = report.results.iter().map(|r| r.delivered).sum();
    let _ = writeln!(md, "- notifications delivered: {delivered}\n");
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
                    replay(f.seed)
                );
            }
        }
        let _ = writeln!(md);
    }
    let _ = writeln!(md, "## Fault and feature coverage\n\nSeeds in which each fault kind or workload feature took effect.\n\n| kind | seeds | share |\n|---|---|---|");
    for (kind, count) in report.coverage() {
        let _ = writeln!(
            md,
            "| {kind} | {count} | {:.1}% |",
            100.0 * count as f64 / n.max(1) as f64
        );
    }
    md
}
