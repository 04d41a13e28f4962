//! Point marks: glyphs on a lane (launches, runs, versions, cancels, …), merged so the
//! output grows with the distinct things that happened, not with raw entry counts.
//!
//! Contract: marks of one kind (glyph and class) on one lane within [`BUCKET_US`] of
//! simulated time are one mark whose title lists the first [`MAX_TITLE_LINES`] entries and
//! counts the rest. Every text is escaped.

use super::escape::{clipped, text};
use super::geometry::Geometry;
use super::lanes::Lanes;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Point marks of one kind on one lane within this much time are merged into one.
const BUCKET_US: u64 = 1_000_000;
/// Most entries a merged mark's title lists.
const MAX_TITLE_LINES: usize = 4;

/// Mark shapes, drawn by `<use>` of a symbol defined once.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Glyph {
    Tri,
    Dot,
    Dia,
    Cross,
    Square,
    Tick,
    Up,
}

impl Glyph {
    /// Every glyph.
    pub const ALL: [Glyph; 7] = [
        Glyph::Tri,
        Glyph::Dot,
        Glyph::Dia,
        Glyph::Cross,
        Glyph::Square,
        Glyph::Tick,
        Glyph::Up,
    ];

    /// The symbol id.
    pub fn id(self) -> &'static str {
        match self {
            Glyph::Tri => "g-tri",
            Glyph::Dot => "g-dot",
            Glyph::Dia => "g-dia",
            Glyph::Cross => "g-x",
            Glyph::Square => "g-sq",
            Glyph::Tick => "g-tk",
            Glyph::Up => "g-up",
        }
    }

    /// The symbol's outline, centred on the origin.
    pub fn path(self) -> &'static str {
        match self {
            Glyph::Tri => "M-4 3.5L0-4 4 3.5Z",
            Glyph::Dot => "M-3.5 0A3.5 3.5 0 1 0 3.5 0A3.5 3.5 0 1 0-3.5 0Z",
            Glyph::Dia => "M0-4.5L4 0 0 4.5-4 0Z",
            Glyph::Cross => {
                "M-4-2.5L-2.5-4 0-1.5 2.5-4 4-2.5 1.5 0 4 2.5 2.5 4 0 1.5-2.5 4-4 2.5-1.5 0Z"
            }
            Glyph::Square => "M-3-3H3V3H-3Z",
            Glyph::Tick => "M-1-4H1V4H-1Z",
            Glyph::Up => "M-3.5 4V-0.5L0-4.5 3.5-0.5V4Z",
        }
    }
}

/// Where in a lane a point mark sits.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Slot {
    /// The remote-status strip of a task lane.
    Status,
    /// The event row of a task lane, or the middle of a host lane.
    Mark,
}

/// Merged point marks: one per (lane, slot, glyph, class, second).
#[derive(Default)]
pub struct Points {
    buckets: BTreeMap<(usize, Slot, Glyph, &'static str, u64), Bucket>,
}

struct Bucket {
    at_us: u64,
    count: usize,
    details: Vec<String>,
    label: Option<String>,
}

impl Points {
    /// Adds a mark of `look` on lane `row` at `at_us`; `detail` goes into its title, `label`
    /// (a version) beside it.
    pub fn add(
        &mut self,
        row: usize,
        look: (Slot, Glyph, &'static str),
        at_us: u64,
        detail: String,
        label: Option<String>,
    ) {
        let (slot, glyph, class) = look;
        let b = self
            .buckets
            .entry((row, slot, glyph, class, at_us / BUCKET_US))
            .or_insert(Bucket {
                at_us,
                count: 0,
                details: Vec::new(),
                label: None,
            });
        b.count += 1;
        if b.details.len() < MAX_TITLE_LINES {
            b.details.push(detail);
        }
        if label.is_some() {
            b.label = label;
        }
    }

    /// Writes every merged mark.
    pub fn write(&self, out: &mut String, geo: &Geometry, lanes: &Lanes) {
        for (&(row, slot, glyph, class, _), b) in &self.buckets {
            let host = lanes.is_host(row);
            let y = geo.top(row)
                + match (host, slot) {
                    (true, _) => 11.0,
                    (false, Slot::Status) => 4.5,
                    (false, Slot::Mark) => 16.0,
                };
            let x = geo.x(b.at_us);
            let lane = lanes.names().get(row).map(String::as_str).unwrap_or("");
            let _ = write!(
                out,
                "<use href=\"#{}\" x=\"{x:.1}\" y=\"{y:.1}\" class=\"{class}\"><title>{}",
                glyph.id(),
                text(lane)
            );
            if b.count > 1 {
                let _ = write!(out, " · {} marks within a second", b.count);
            }
            for d in &b.details {
                let _ = write!(out, "\n{}", text(d));
            }
            if b.count > b.details.len() {
                let _ = write!(out, "\n… and {} more", b.count - b.details.len());
            }
            out.push_str("</title></use>");
            if let Some(label) = &b.label {
                let _ = write!(
                    out,
                    "<text x=\"{:.1}\" y=\"{:.1}\" class=\"vt\">{}</text>",
                    x + 4.5,
                    y - 3.0,
                    clipped(label, 12)
                );
            }
        }
    }
}

/// The glyph symbols, defined once per SVG with ids prefixed by `prefix` (the legend has its
/// own copies, so the page has no duplicate ids).
pub fn defs(out: &mut String, prefix: &str) {
    out.push_str("<defs>");
    for g in Glyph::ALL {
        let _ = write!(out, "<path id=\"{prefix}{}\" d=\"{}\"/>", g.id(), g.path());
    }
    out.push_str("</defs>");
}
