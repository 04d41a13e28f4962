//! Fault bands: each planned fault as a translucent band over the lanes of the hosts it hits,
//! labelled where wide enough. Which lanes and which colour come from the fault kind itself
//! ([`crate::plan::fault::FaultKind::target`] and [`crate::plan::fault::FaultKind::look`]).

use super::describe::secs;
use super::escape::text;
use super::geometry::{Geometry, LANE_H};
use super::lanes::Lanes;
use crate::plan::fault::Fault;
use crate::plan::Plan;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The rows a fault is drawn on: the lanes of the hosts it hits (worker first), or every host
/// lane for a network-wide fault.
pub fn fault_rows(f: &Fault, lanes: &Lanes) -> Vec<usize> {
    match f.kind.target().hosts() {
        Some(hosts) => hosts.iter().filter_map(|n| lanes.row(n)).collect(),
        None => (0..lanes.host_count()).collect(),
    }
}

/// The bands of a fault: (first row, rows spanned). A network-wide fault is one band across
/// all host lanes; any other fault one band per lane it hits.
fn spans(f: &Fault, lanes: &Lanes) -> Vec<(usize, usize)> {
    match f.kind.target().hosts() {
        Some(_) => fault_rows(f, lanes).into_iter().map(|r| (r, 1)).collect(),
        None => vec![(0, lanes.host_count())],
    }
}

/// Writes the plan's faults as bands, cut at the end of the chaos phase.
pub fn render(out: &mut String, plan: &Plan, lanes: &Lanes, geo: &Geometry) {
    out.push_str("<g class=\"faults\">");
    let chaos_us = plan.chaos_ms.saturating_mul(1_000);
    let mut per_row: BTreeMap<usize, usize> = BTreeMap::new();
    for (i, f) in plan.faults.iter().enumerate() {
        for (row, n_rows) in spans(f, lanes) {
            let nth = per_row.entry(row).or_default();
            band(out, geo, (i, f), (row, n_rows), chaos_us, *nth);
            *nth += 1;
        }
    }
    out.push_str("</g>");
}

/// One band of fault `i` over `n_rows` lanes from `row`; `nth` is how many bands that lane
/// already has (labels alternate between the top and the bottom of the lane).
fn band(
    out: &mut String,
    geo: &Geometry,
    (i, f): (usize, &Fault),
    (row, n_rows): (usize, usize),
    chaos_us: u64,
    nth: usize,
) {
    let start = f.at_ms.saturating_mul(1_000);
    let planned_end = f.at_ms.saturating_add(f.for_ms).saturating_mul(1_000);
    let end = planned_end.min(chaos_us.max(start));
    let (x0, x1) = (geo.x(start), geo.x(end));
    let width = (x1 - x0).max(2.0);
    let name = f.name();
    let top = geo.top(row);
    let _ = write!(
        out,
        "<rect x=\"{x0:.1}\" y=\"{:.1}\" width=\"{width:.1}\" height=\"{:.0}\" class=\"band {}\"><title>fault #{i} {name} · {} · planned {}–{} s{}</title></rect>",
        top + 1.0,
        LANE_H * n_rows as f64 - 2.0,
        f.kind.look().band,
        text(&f.kind.detail()),
        secs(start),
        secs(planned_end),
        if end < planned_end { " (cut short by the end of the chaos phase)" } else { "" }
    );
    if width >= name.len() as f64 * 4.6 + 6.0 {
        let y = if nth % 2 == 0 { top + 9.0 } else { top + 20.0 };
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{y:.1}\" class=\"band-t\">{name}</text>",
            x0 + 2.0
        );
    }
}
