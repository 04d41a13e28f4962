//! Lease bars: the middle row of a task lane, one bar per lease from its grant to its release,
//! its expiry or its replacement by a newer claim.
//!
//! Contract: a lease is opened by a claim's grant and ended by the first accepted write of the
//! same task, lease kind and token, by a newer grant (at the old lease's expiry if that came
//! first) or by the end of the history. A bar that ran to expiry is drawn hatched; a grant
//! whose reply was dropped is marked. Every text is escaped.

use super::describe::secs;
use super::escape::text;
use super::geometry::Geometry;
use crate::history::write_action::WriteAction;
use std::collections::BTreeMap;
use std::fmt::Write;
use tasklatch_core::lease::LeaseKind;

/// A lease the store granted and that has not ended yet in the walk.
pub struct OpenLease {
    /// The task's lane.
    pub row: usize,
    /// The task's label.
    pub lane: String,
    /// Which lease.
    pub kind: LeaseKind,
    /// When it was granted.
    pub start_us: u64,
    /// Its fencing token.
    pub token: u64,
    /// Who claimed it.
    pub worker: String,
    /// When it expires, in simulated time.
    pub expiry_us: u64,
    /// The claim's reply was dropped.
    pub dropped: bool,
}

/// The lease bars of the walk, and the leases still open.
pub struct LeaseBars<'a> {
    geo: &'a Geometry,
    /// (task id, lease kind) → the open lease.
    open: BTreeMap<(String, &'static str), OpenLease>,
    /// The bars drawn so far.
    pub svg: String,
}

impl<'a> LeaseBars<'a> {
    /// No leases yet.
    pub fn new(geo: &'a Geometry) -> Self {
        LeaseBars {
            geo,
            open: BTreeMap::new(),
            svg: String::new(),
        }
    }

    /// A claim granted `l` on task `task_id` at `l.start_us`: ends the lease it replaces.
    pub fn grant(&mut self, task_id: &str, l: OpenLease) {
        let t = l.start_us;
        let key = (task_id.to_owned(), l.kind.as_str());
        if let Some(prev) = self.open.insert(key, l) {
            let end = prev.expiry_us.min(t);
            let how = if prev.expiry_us <= t {
                "expired"
            } else {
                "superseded by a new claim"
            };
            self.bar(&prev, end, how);
        }
    }

    /// An accepted write by `action` at `t` with `token`: ends the lease it was made under.
    pub fn written(
        &mut self,
        task_id: &str,
        kind: LeaseKind,
        token: u64,
        t: u64,
        action: WriteAction,
    ) {
        let key = (task_id.to_owned(), kind.as_str());
        if self.open.get(&key).is_some_and(|l| l.token == token) {
            if let Some(l) = self.open.remove(&key) {
                let how = format!("ended by {action}");
                self.bar(&l, t, &how);
            }
        }
    }

    /// Ends every lease still open at `end`, the end of the history.
    pub fn finish(&mut self, end: u64) {
        for (_, l) in std::mem::take(&mut self.open) {
            let how = if l.expiry_us <= end {
                "expired"
            } else {
                "held at the end of the history"
            };
            self.bar(&l, l.expiry_us.min(end), how);
        }
    }

    fn bar(&mut self, l: &OpenLease, end_us: u64, how: &str) {
        let (x0, x1) = (self.geo.x(l.start_us), self.geo.x(end_us.max(l.start_us)));
        let class = match l.kind {
            LeaseKind::Poll => "lp",
            LeaseKind::Notify => "ln",
            LeaseKind::Cancel => "lc",
        };
        let expired = if how == "expired" { " lx" } else { "" };
        let lost = if l.dropped { " lz" } else { "" };
        let _ = write!(
            self.svg,
            "<rect x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"4\" class=\"{class}{expired}{lost}\"><title>{} · {} lease token {} ({}): {}–{} s, {}{}</title></rect>",
            self.geo.top(l.row) + 8.0,
            (x1 - x0).max(1.5),
            text(&l.lane),
            l.kind.as_str(),
            l.token,
            text(&l.worker),
            secs(l.start_us),
            secs(end_us),
            text(how),
            if l.dropped { "; the claim's reply was dropped" } else { "" }
        );
    }
}
