//! Fault windows that may hold some work back, and the time they add to a bound on it.

use super::facts::Facts;
use crate::plan::fault::FaultKind;

/// The plan's fault windows (µs since start) of the kinds a check picked, each worth its
/// overlap with a gap plus one lease (a stalled holder's lease must expire first).
pub(super) struct Disturbances {
    windows: Vec<(u64, u64)>,
    lease_us: u64,
}

impl Disturbances {
    /// The windows of the plan's faults that `pick` accepts, each worth one `lease_us` more.
    pub(super) fn of(f: &Facts<'_>, lease_us: u64, pick: impl Fn(&FaultKind) -> bool) -> Self {
        let windows = f
            .plan
            .faults
            .iter()
            .filter(|fault| pick(&fault.kind))
            .map(|fault| (fault.at_ms * 1_000, (fault.at_ms + fault.for_ms) * 1_000))
            .collect();
        Self { windows, lease_us }
    }

    /// Like [`Self::of`], each window stretched by what its fault leaves behind
    /// ([`FaultKind::lingers_ms`]): for rules whose bound is short enough that a stalled lane
    /// or a stepped clock outlasting the window shows.
    pub(super) fn of_lingering(
        f: &Facts<'_>,
        lease_us: u64,
        pick: impl Fn(&FaultKind) -> bool,
    ) -> Self {
        let windows = f
            .plan
            .faults
            .iter()
            .filter(|fault| pick(&fault.kind))
            .map(|fault| {
                let end_ms = fault.at_ms + fault.for_ms + fault.kind.lingers_ms();
                (fault.at_ms * 1_000, end_ms * 1_000)
            })
            .collect();
        Self { windows, lease_us }
    }

    /// What the windows overlapping `from..to` add: each its part inside, plus a lease.
    pub(super) fn extra(&self, from: u64, to: u64) -> u64 {
        self.windows
            .iter()
            .filter(|(start, end)| *start < to && *end > from)
            .map(|(start, end)| end.min(&to) - start.max(&from) + self.lease_us)
            .sum()
    }
}
