//! The claimer's own, monotonic view of how long a batch's leases last.

use crate::ports::Clock;
use std::time::Duration;

/// When a claimed batch's leases end on the claiming process's monotonic clock
/// ([`Clock::monotonic`]): the reading just before the claim was sent, plus the lease's length.
///
/// A lease's `expires_at` is wall time, and the wall clock can jump back mid-pass (NTP, a VM
/// resumed from a snapshot); measured on that clock a lease looks longer than it is, while
/// other workers, whose clocks did not jump, may already claim the row. This deadline cannot
/// stretch: an external call starts only when both clocks leave enough of the lease.
#[derive(Clone, Copy, Debug)]
pub(super) struct LocalDeadline(Duration);

impl LocalDeadline {
    /// The deadline of a lease of `lease_for` claimed now.
    pub(super) fn after(clock: &impl Clock, lease_for: Duration) -> Self {
        Self(clock.monotonic() + lease_for)
    }

    /// Whether at least `margin` is left before the deadline.
    pub(super) fn leaves(&self, clock: &impl Clock, margin: Duration) -> bool {
        clock.monotonic() + margin < self.0
    }
}
