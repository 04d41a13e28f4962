//! The remote-status strip: the top of a task lane, one segment per remote status the MCP
//! server served, drawn only where the status changes.

use super::describe::secs;
use super::escape::text;
use super::geometry::Geometry;
use super::lanes::Lanes;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The status segments of the walk, and each task's current one.
pub struct StatusStrip<'a> {
    geo: &'a Geometry,
    lanes: &'a Lanes,
    /// task label → (since, status) of the current segment.
    current: BTreeMap<String, (u64, String)>,
    /// The segments drawn so far.
    pub svg: String,
}

impl<'a> StatusStrip<'a> {
    /// No statuses yet.
    pub fn new(geo: &'a Geometry, lanes: &'a Lanes) -> Self {
        StatusStrip {
            geo,
            lanes,
            current: BTreeMap::new(),
            svg: String::new(),
        }
    }

    /// A remote status served at `t`: a new segment where it differs from the current one.
    pub fn served(&mut self, label: &str, status: &str, t: u64) {
        if self.current.get(label).is_some_and(|(_, s)| s == status) {
            return;
        }
        if let Some((since, prev)) = self
            .current
            .insert(label.to_owned(), (t, status.to_owned()))
        {
            self.segment(label, &prev, since, t);
        }
    }

    /// Closes every segment at `end`, the end of the history.
    pub fn finish(&mut self, end: u64) {
        for (label, (since, status)) in std::mem::take(&mut self.current) {
            self.segment(&label, &status, since, end);
        }
    }

    fn segment(&mut self, label: &str, status: &str, from: u64, to: u64) {
        let Some(row) = self.lanes.row(label) else {
            return;
        };
        let (x0, x1) = (self.geo.x(from), self.geo.x(to));
        let class = match status {
            "working" | "input_required" | "completed" | "failed" | "cancelled" | "submitted" => {
                status
            }
            _ => "other",
        };
        let _ = write!(
            self.svg,
            "<rect x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"5\" class=\"st-{class}\"><title>{} · remote status {}: {}–{} s</title></rect>",
            self.geo.top(row) + 2.0,
            (x1 - x0).max(1.0),
            text(label),
            text(status),
            secs(from),
            secs(to)
        );
    }
}
