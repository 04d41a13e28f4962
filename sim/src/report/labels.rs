//! The label column beside the plot: one label per lane, titled with the host's role or the
//! task's plan, so the labels stay put while the plot scrolls sideways.

use super::describe::secs;
use super::escape::text;
use super::geometry::{Geometry, LABEL_W};
use super::lanes::Lanes;
use crate::plan::naming::{is_worker_host, owner_name, task_number};
use crate::plan::{Plan, TaskPlan};
use std::fmt::Write;

/// Writes the label column; lanes in `violating` are labelled in red.
pub fn render(out: &mut String, plan: &Plan, lanes: &Lanes, geo: &Geometry, violating: &[usize]) {
    let _ = write!(out, "<svg class=\"labels\" width=\"{LABEL_W:.0}\" height=\"{h:.0}\" viewBox=\"0 0 {LABEL_W:.0} {h:.0}\">", h = geo.height);
    for (row, name) in lanes.names().iter().enumerate() {
        let class = match (violating.contains(&row), lanes.is_host(row)) {
            (true, _) => "lab vl-t",
            (false, true) => "lab host-t",
            (false, false) => "lab",
        };
        let _ = write!(
            out,
            "<text x=\"{:.0}\" y=\"{:.1}\" class=\"{class}\">{}<title>{}</title></text>",
            LABEL_W - 6.0,
            geo.top(row) + 15.0,
            text(name),
            text(&lane_title(plan, name))
        );
    }
    out.push_str("</svg>");
}

/// What a lane label's title says: the host's role, or the task's plan.
fn lane_title(plan: &Plan, name: &str) -> String {
    let task = task_number(name)
        .and_then(|n| u32::try_from(n).ok())
        .and_then(|n| plan.task(n));
    match (name, task) {
        ("db", _) => "db: the store (claims, leases, versions)".to_owned(),
        ("mcp", _) => "mcp: the remote task server".to_owned(),
        ("gateway", _) => "gateway: the run launcher".to_owned(),
        ("user", _) => "user: submits, cancels, lists, deletes threads".to_owned(),
        (_, Some(t)) => task_title(name, t),
        (n, None) if is_worker_host(n) => format!("{n}: an engine host"),
        (n, None) => n.to_owned(),
    }
}

/// A task lane's title: owner, thread, submit time, script and quirk.
fn task_title(name: &str, t: &TaskPlan) -> String {
    let steps: Vec<String> = t
        .steps
        .iter()
        .map(|s| format!("{:?}@+{} s", s.status, secs(s.after_ms * 1_000)))
        .collect();
    format!(
        "{name}: {} thread {}, submitted at {} s; script: {}{}",
        owner_name(t.owner),
        t.thread,
        secs(t.submit_at_ms * 1_000),
        if steps.is_empty() {
            "none".to_owned()
        } else {
            steps.join(", ")
        },
        t.quirk
            .as_ref()
            .map(|q| format!("; quirk {:?} at +{} s", q.kind, secs(q.after_ms * 1_000)))
            .unwrap_or_default()
    )
}
