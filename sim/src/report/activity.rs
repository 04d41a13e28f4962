//! Host activity: how many entries each host recorded per simulated second, drawn as a
//! run-length strip of three intensities at the bottom of the host's lane.

use super::escape::text;
use super::geometry::Geometry;
use super::lanes::Lanes;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Entries per (lane, second).
#[derive(Default)]
pub struct Activity {
    counts: BTreeMap<(usize, u64), u32>,
}

/// A run of seconds of one level on one lane: row, first second, last second, level, entries.
type Run = (usize, u64, u64, u8, u32);

impl Activity {
    /// Counts one entry recorded on lane `row` at `at_us`.
    pub fn count(&mut self, row: usize, at_us: u64) {
        *self.counts.entry((row, at_us / 1_000_000)).or_default() += 1;
    }

    /// The strip: consecutive seconds of one level on one lane merged into one rectangle.
    pub fn svg(&self, geo: &Geometry, lanes: &Lanes) -> String {
        let mut out = String::new();
        let mut run: Option<Run> = None;
        for (&(row, sec), &n) in &self.counts {
            let level = match n {
                0..=2 => 1,
                3..=9 => 2,
                _ => 3,
            };
            run = match run {
                Some((r, a, b, l, total)) if r == row && b + 1 == sec && l == level => {
                    Some((r, a, sec, l, total + n))
                }
                Some(prev) => {
                    flush(&mut out, prev, geo, lanes);
                    Some((row, sec, sec, level, n))
                }
                None => Some((row, sec, sec, level, n)),
            };
        }
        if let Some(prev) = run {
            flush(&mut out, prev, geo, lanes);
        }
        out
    }
}

fn flush(out: &mut String, r: Run, geo: &Geometry, lanes: &Lanes) {
    let (row, a, b, level, n) = r;
    let (x0, x1) = (geo.x(a * 1_000_000), geo.x((b + 1) * 1_000_000));
    let name = lanes.names().get(row).map(String::as_str).unwrap_or("");
    let _ = write!(
        out,
        "<rect x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"3\" class=\"a{level}\"><title>{} · {n} entries in {a}–{} s</title></rect>",
        geo.top(row) + 18.0,
        x1 - x0,
        text(name),
        b + 1
    );
}
