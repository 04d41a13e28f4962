//! Where things go on the timeline: simulated time to x, lane to y.
//!
//! Contract: [`PX_PER_S`] pixels per simulated second (1 px per 250 ms), stretched so the plot
//! is at least [`MIN_PLOT_W`] wide and compressed so it is at most [`MAX_PLOT_W`] wide (one
//! hour); every lane is [`LANE_H`] pixels high whatever happens in it.

use crate::history::Entry;
use crate::plan::Plan;

/// Height of one lane, in pixels.
pub const LANE_H: f64 = 22.0;
/// Height of the time axis above the lanes.
pub const AXIS_H: f64 = 30.0;
/// Space below the last lane.
pub const FOOT_H: f64 = 8.0;
/// Width of the lane-label column.
pub const LABEL_W: f64 = 104.0;
/// Pixels per simulated second (1 px per 250 ms).
pub const PX_PER_S: f64 = 4.0;
/// Narrowest plot.
pub const MIN_PLOT_W: f64 = 960.0;
/// Widest plot (one hour at [`PX_PER_S`]); longer runs are compressed to fit.
pub const MAX_PLOT_W: f64 = 14_400.0;
/// Empty time after the last entry.
const MARGIN_US: u64 = 8_000_000;

/// Maps simulated time and rows to pixels.
pub struct Geometry {
    px_per_us: f64,
    /// The last simulated instant on the plot.
    pub end_us: u64,
    /// Plot width.
    pub width: f64,
    /// Plot (and label column) height.
    pub height: f64,
}

impl Geometry {
    /// Geometry for a run whose last instant of interest is `last_us`, with `rows` lanes.
    pub fn new(last_us: u64, rows: usize) -> Geometry {
        let end_us = last_us.saturating_add(MARGIN_US);
        let width = (end_us as f64 / 1e6 * PX_PER_S).clamp(MIN_PLOT_W, MAX_PLOT_W);
        Geometry {
            px_per_us: width / end_us as f64,
            end_us,
            width,
            height: AXIS_H + rows as f64 * LANE_H + FOOT_H,
        }
    }

    /// x of simulated instant `us` (clamped to the plot).
    pub fn x(&self, us: u64) -> f64 {
        us.min(self.end_us) as f64 * self.px_per_us
    }

    /// y of the top of lane `row`.
    pub fn top(&self, row: usize) -> f64 {
        AXIS_H + row as f64 * LANE_H
    }
}

/// The last instant worth drawing: the last entry, the end of the chaos phase, the end of the
/// last fault window.
pub fn last_us(plan: &Plan, entries: &[Entry]) -> u64 {
    let last_entry = entries.iter().map(|e| e.at_us).max().unwrap_or(0);
    let chaos = plan.chaos_ms.saturating_mul(1_000);
    last_entry.max(chaos).max(1)
}
