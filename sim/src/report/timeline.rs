//! The timeline: one inline SVG with x = simulated time and one lane per host and per task,
//! plus a narrow SVG of lane labels beside it (so the labels stay put while the plot scrolls
//! sideways).
//!
//! Contract:
//! - Scale and lane height as [`super::geometry`] says.
//! - Output stays proportional to the *distinct* things that happened, not to the raw entry
//!   count: point marks are merged ([`super::marks`]); remote statuses are drawn only where
//!   they change; store versions only where they move; host activity is a run-length strip.
//! - Every text taken from the history is escaped ([`super::escape`]); marks of entries that
//!   name unknown lanes, tasks or faults are skipped, never a panic.
//!
//! The plot is drawn back to front: lane backgrounds, the time axis, fault bands
//! ([`super::bands`]), what the walk over the history draws ([`super::walk`]), violations.

use super::describe::{self, secs};
use super::escape::{clipped, text};
use super::geometry::{last_us, Geometry, AXIS_H, FOOT_H, LANE_H};
use super::lanes::Lanes;
use super::{bands, labels, marks, walk};
use crate::check::Verdict;
use crate::history::{Entry, Seen};
use crate::plan::Plan;
use std::fmt::Write;

/// Violations marked on the timeline (the header lists them all).
const MAX_VIOLATION_MARKS: usize = 50;

/// Writes the timeline (label column and plot) for a run.
pub fn render(out: &mut String, plan: &Plan, entries: &[Entry], verdict: &Verdict, lanes: &Lanes) {
    let rows = lanes.names().len();
    let geo = Geometry::new(last_us(plan, entries), rows);
    let violating: Vec<usize> = verdict
        .violations
        .iter()
        .filter_map(|v| v.task.as_deref())
        .filter_map(|t| lanes.row(t))
        .collect();

    out.push_str("<div class=\"tl\">");
    labels::render(out, plan, lanes, &geo, &violating);
    let _ = write!(
        out,
        "<div class=\"scroll\"><svg class=\"plot\" width=\"{w:.0}\" height=\"{h:.0}\" viewBox=\"0 0 {w:.0} {h:.0}\" role=\"img\" aria-label=\"timeline\">",
        w = geo.width,
        h = geo.height
    );
    marks::defs(out, "");
    backgrounds(out, lanes, &geo, &violating);
    axis(out, &geo, entries);
    bands::render(out, plan, lanes, &geo);
    walk::render(out, plan, entries, lanes, &geo);
    violations(out, plan, entries, verdict, lanes, &geo);
    out.push_str("</svg></div></div>");
}

fn backgrounds(out: &mut String, lanes: &Lanes, geo: &Geometry, violating: &[usize]) {
    out.push_str("<g class=\"lanes\">");
    for (row, name) in lanes.names().iter().enumerate() {
        let class = if violating.contains(&row) {
            "bg vl"
        } else if lanes.is_host(row) {
            "bg host"
        } else if row % 2 == 0 {
            "bg even"
        } else {
            "bg"
        };
        let id: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let _ = write!(
            out,
            "<rect id=\"lane-{id}\" data-lane=\"{}\" x=\"0\" y=\"{:.1}\" width=\"{:.0}\" height=\"{LANE_H:.0}\" class=\"{class}\"/>",
            text(name),
            geo.top(row),
            geo.width
        );
    }
    if lanes.host_count() < lanes.names().len() {
        let y = geo.top(lanes.host_count());
        let _ = write!(
            out,
            "<line x1=\"0\" y1=\"{y:.1}\" x2=\"{:.0}\" y2=\"{y:.1}\" class=\"sep\"/>",
            geo.width
        );
    }
    out.push_str("</g>");
}

/// The time axis with ticks every few seconds (at least 40 px apart), a faint grid, and the
/// phase boundaries (`chaos`, `heal`, `settled`) as dashed lines.
fn axis(out: &mut String, geo: &Geometry, entries: &[Entry]) {
    const STEPS_S: [u64; 12] = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1_800, 3_600];
    let step = STEPS_S
        .iter()
        .copied()
        .find(|s| geo.x(s * 1_000_000) >= 40.0)
        .unwrap_or(3_600);
    let bottom = geo.height - FOOT_H;
    let mut grid = String::new();
    out.push_str("<g class=\"axis\">");
    let mut s = 0;
    while s * 1_000_000 <= geo.end_us {
        let x = geo.x(s * 1_000_000);
        let _ = write!(grid, "M{x:.1} {:.0}V{bottom:.0}", AXIS_H - 4.0);
        let _ = write!(
            out,
            "<text x=\"{x:.1}\" y=\"{:.0}\" class=\"tick\">{s} s</text>",
            AXIS_H - 7.0
        );
        s += step;
    }
    let _ = write!(out, "<path d=\"{grid}\" class=\"grid\"/>");
    for e in entries {
        if let Seen::Phase { name } = &e.event {
            let x = geo.x(e.at_us);
            let _ = write!(
                out,
                "<line x1=\"{x:.1}\" y1=\"2\" x2=\"{x:.1}\" y2=\"{bottom:.0}\" class=\"ph\"><title>phase {} at {} s</title></line><text x=\"{:.1}\" y=\"9\" class=\"ph-t\">{}</text>",
                text(name),
                secs(e.at_us),
                x + 2.0,
                clipped(name, 16)
            );
        }
    }
    out.push_str("</g>");
}

/// The violations: a ring on the violating entry's lane for each, and for the first one a
/// vertical line across the whole timeline.
fn violations(
    out: &mut String,
    plan: &Plan,
    entries: &[Entry],
    verdict: &Verdict,
    lanes: &Lanes,
    geo: &Geometry,
) {
    out.push_str("<g class=\"violations\">");
    for (k, v) in verdict
        .violations
        .iter()
        .enumerate()
        .take(MAX_VIOLATION_MARKS)
    {
        let Some((index, entry)) = v.entry.and_then(|i| entries.get(i).map(|e| (i, e))) else {
            continue;
        };
        let row = v
            .task
            .as_deref()
            .and_then(|t| lanes.row(t))
            .or_else(|| lanes.tasks_of(entry).into_iter().find_map(|t| lanes.row(t)))
            .or_else(|| lanes.row(&entry.host));
        let x = geo.x(entry.at_us);
        let title = format!(
            "violation {}: {}\n{}",
            k + 1,
            v,
            describe::line(plan, index, entry)
        );
        if k == 0 {
            let _ = write!(
                out,
                "<line id=\"violation-line\" x1=\"{x:.1}\" y1=\"{:.0}\" x2=\"{x:.1}\" y2=\"{:.0}\" class=\"vline\"><title>{}</title></line>",
                AXIS_H - 10.0,
                geo.height - FOOT_H,
                text(&title)
            );
        }
        if let Some(row) = row {
            let _ = write!(
                out,
                "<circle id=\"violation-{k}\" cx=\"{x:.1}\" cy=\"{:.1}\" r=\"8\" class=\"vmark\"><title>{}</title></circle>",
                geo.top(row) + LANE_H / 2.0,
                text(&title)
            );
        }
    }
    out.push_str("</g>");
}
