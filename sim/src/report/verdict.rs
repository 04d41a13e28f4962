//! The page header: the checker's verdict (PASSED / FAILED), every violation, the counts,
//! and what was run (seed, workers, tasks, faults, history hash).
//!
//! Contract: the verdict line carries `id="verdict"` and the literal word `PASSED` or
//! `FAILED`; each violation row carries `id="violation-row-{k}"`; the hash carries
//! `id="history-hash"`. All text is escaped.

use super::describe::secs;
use super::escape::text;
use crate::check::Verdict;
use crate::history::Entry;
use crate::plan::Plan;
use std::fmt::Write;

/// Most violations listed (the count above says how many there were).
const MAX_VIOLATION_ROWS: usize = 200;

/// Writes the header.
pub fn render(out: &mut String, plan: &Plan, entries: &[Entry], verdict: &Verdict, hash: &str) {
    out.push_str("<header>");
    let _ = write!(out, "<h1>tasklatch simulation · seed {}</h1>", plan.seed);
    let n = verdict.violations.len();
    if verdict.passed() {
        out.push_str("<p id=\"verdict\" class=\"verdict pass\">PASSED · no invariant broken</p>");
    } else {
        let _ = write!(
            out,
            "<p id=\"verdict\" class=\"verdict fail\">FAILED · {n} violation{}</p>",
            if n == 1 { "" } else { "s" }
        );
        violations(out, entries, verdict);
    }
    run(out, plan, entries, hash);
    counts(out, verdict);
    faults(out, plan);
    out.push_str("</header>");
}

fn violations(out: &mut String, entries: &[Entry], verdict: &Verdict) {
    out.push_str("<table class=\"violations\"><thead><tr><th>#</th><th>invariant</th><th>task</th><th>entry</th><th>time (s)</th><th>detail</th></tr></thead><tbody>");
    for (k, v) in verdict
        .violations
        .iter()
        .enumerate()
        .take(MAX_VIOLATION_ROWS)
    {
        let at = v
            .entry
            .and_then(|i| entries.get(i))
            .map(|e| secs(e.at_us))
            .unwrap_or_else(|| "–".to_owned());
        let _ = write!(
            out,
            "<tr id=\"violation-row-{k}\"{}><td>{}</td><td class=\"inv\">{}</td><td>{}</td><td>{}</td><td>{at}</td><td>{}</td></tr>",
            if k == 0 { " class=\"first\"" } else { "" },
            k + 1,
            v.invariant.as_str(),
            v.task.as_deref().map(text).unwrap_or_else(|| "–".to_owned()),
            v.entry.map(|e| e.to_string()).unwrap_or_else(|| "–".to_owned()),
            text(&v.detail)
        );
    }
    out.push_str("</tbody></table>");
    if verdict.violations.len() > MAX_VIOLATION_ROWS {
        let _ = write!(
            out,
            "<p class=\"note\">… and {} more violations.</p>",
            verdict.violations.len() - MAX_VIOLATION_ROWS
        );
    }
}

fn run(out: &mut String, plan: &Plan, entries: &[Entry], hash: &str) {
    let last = entries.iter().map(|e| e.at_us).max().unwrap_or(0);
    out.push_str("<dl class=\"run\">");
    let items = [
        ("seed", plan.seed.to_string()),
        (
            "workers",
            format!("{} × {} lanes", plan.workers, plan.lanes),
        ),
        ("tasks", plan.tasks.len().to_string()),
        ("faults", plan.faults.len().to_string()),
        ("user actions", plan.user.len().to_string()),
        (
            "chaos phase",
            format!("{} s", secs(plan.chaos_ms.saturating_mul(1_000))),
        ),
        (
            "history",
            format!("{} entries over {} s", entries.len(), secs(last)),
        ),
    ];
    for (k, v) in items {
        let _ = write!(out, "<div><dt>{k}</dt><dd>{}</dd></div>", text(&v));
    }
    let _ = write!(
        out,
        "<div class=\"hash\"><dt>history sha256</dt><dd id=\"history-hash\">{}</dd></div>",
        text(hash)
    );
    out.push_str("</dl>");
}

fn counts(out: &mut String, verdict: &Verdict) {
    let c = &verdict.counts;
    let items = [
        ("delivered", c.delivered),
        ("lost", c.lost),
        ("duplicated", c.duplicated),
        ("unexpected", c.unexpected),
        ("noisy", c.noisy),
        ("fenced writes refused", c.fenced_refused),
        ("dead: thread gone", c.dead_thread_gone),
        ("dead: budget spent", c.dead_budget),
        ("dead: cancel", c.dead_cancel),
    ];
    out.push_str("<dl class=\"counts\">");
    for (k, v) in items {
        let _ = write!(out, "<div><dt>{k}</dt><dd>{v}</dd></div>");
    }
    out.push_str("</dl>");
}

fn faults(out: &mut String, plan: &Plan) {
    let _ = write!(
        out,
        "<details class=\"faults\"><summary>Fault plan ({} faults)</summary>",
        plan.faults.len()
    );
    out.push_str("<table><thead><tr><th>#</th><th>coverage name</th><th>target</th><th>from (s)</th><th>to (s)</th></tr></thead><tbody>");
    for (i, f) in plan.faults.iter().enumerate() {
        let _ = write!(
            out,
            "<tr><td>{i}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            f.name(),
            text(&f.kind.detail()),
            secs(f.at_ms.saturating_mul(1_000)),
            secs(f.at_ms.saturating_add(f.for_ms).saturating_mul(1_000))
        );
    }
    out.push_str("</tbody></table></details>");
}
