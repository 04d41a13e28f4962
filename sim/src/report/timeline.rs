//! The timeline: one inline SVG with x = simulated time and one lane per host and per task,
//! plus a narrow SVG of lane labels beside it (so the labels stay put while the plot scrolls
//! sideways).
//!
//! Contract:
//! - Scale: [`PX_PER_S`] pixels per simulated second (1 px per 250 ms), stretched so the plot is
//!   at least [`MIN_PLOT_W`] wide and compressed so it is at most [`MAX_PLOT_W`] wide (one hour).
//! - Lanes are [`LANE_H`] pixels high whatever happens in them.
//! - Output stays proportional to the *distinct* things that happened, not to the raw entry
//!   count: point marks of one kind on one lane within one simulated second are merged into one
//!   mark whose title lists the first few; remote statuses are drawn only where they change;
//!   store versions only where they move; host activity is a run-length strip.
//! - Every text taken from the history is escaped ([`super::escape`]); marks of entries that
//!   name unknown lanes, tasks or faults are skipped, never a panic.

use super::describe::{self, fault_label, fault_target, row_write, secs, served_status};
use super::escape::{clipped, text};
use super::lanes::Lanes;
use crate::checker::Verdict;
use crate::coverage::fault_name;
use crate::ctx::EPOCH_SECS;
use crate::history::{Entry, Event, LaunchAnswer, RemoteOp};
use crate::plan::{Fault, FaultKind, Plan};
use std::collections::BTreeMap;
use std::fmt::Write;
use tasklatch_core::lease::LeaseKind;
use tasklatch_core::ports::RunStatus;

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
/// Point marks of one kind on one lane within this much time are merged into one.
const BUCKET_US: u64 = 1_000_000;
/// Most entries a merged mark's title lists.
const MAX_TITLE_LINES: usize = 4;
/// Violations marked on the timeline (the header lists them all).
const MAX_VIOLATION_MARKS: usize = 50;
/// Epoch microseconds of simulated time zero (lease expiries are in engine time).
const EPOCH_US: i64 = EPOCH_SECS as i64 * 1_000_000;

/// Maps simulated time and rows to pixels.
pub struct Geometry {
    px_per_us: f64,
    end_us: u64,
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

/// Mark shapes, drawn by `<use>` of a symbol defined once.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Glyph {
    Tri,
    Dot,
    Dia,
    Cross,
    Square,
    Tick,
    Up,
}

impl Glyph {
    const ALL: [Glyph; 7] = [
        Glyph::Tri,
        Glyph::Dot,
        Glyph::Dia,
        Glyph::Cross,
        Glyph::Square,
        Glyph::Tick,
        Glyph::Up,
    ];

    fn id(self) -> &'static str {
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

    fn path(self) -> &'static str {
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
enum Slot {
    /// The remote-status strip of a task lane.
    Status,
    /// The event row of a task lane, or the middle of a host lane.
    Mark,
}

/// Merged point marks: one per (lane, slot, glyph, class, second).
#[derive(Default)]
struct Points {
    buckets: BTreeMap<(usize, Slot, Glyph, &'static str, u64), Bucket>,
}

struct Bucket {
    at_us: u64,
    count: usize,
    details: Vec<String>,
    label: Option<String>,
}

impl Points {
    fn add(
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

    fn write(&self, out: &mut String, geo: &Geometry, lanes: &Lanes) {
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

/// A lease the store granted and that has not ended yet in the walk.
struct OpenLease {
    row: usize,
    lane: String,
    kind: LeaseKind,
    start_us: u64,
    token: u64,
    worker: String,
    expiry_us: u64,
    dropped: bool,
}

/// Everything drawn from the history in one pass.
struct Walk<'a> {
    plan: &'a Plan,
    lanes: &'a Lanes,
    geo: &'a Geometry,
    points: Points,
    status_svg: String,
    lease_svg: String,
    stall_svg: String,
    /// task label → (since, status) of the current remote status segment.
    status: BTreeMap<String, (u64, String)>,
    /// task label → (event version, (notified version, notify status)) last written; the
    /// notified part is unknown after an insert.
    versions: BTreeMap<String, (u64, Option<(u64, String)>)>,
    /// (task id, lease kind) → the open lease.
    leases: BTreeMap<(String, &'static str), OpenLease>,
    /// (row, second) → entries recorded by that host in that second.
    activity: BTreeMap<(usize, u64), u32>,
}

impl<'a> Walk<'a> {
    fn new(plan: &'a Plan, lanes: &'a Lanes, geo: &'a Geometry) -> Self {
        Walk {
            plan,
            lanes,
            geo,
            points: Points::default(),
            status_svg: String::new(),
            lease_svg: String::new(),
            stall_svg: String::new(),
            status: BTreeMap::new(),
            versions: BTreeMap::new(),
            leases: BTreeMap::new(),
            activity: BTreeMap::new(),
        }
    }

    fn task_row(&self, e: &Entry) -> Option<usize> {
        e.task.as_deref().and_then(|t| self.lanes.row(t))
    }

    fn entry(&mut self, i: usize, e: &Entry) {
        let host_row = self.lanes.row(&e.host);
        if let Some(r) = host_row {
            *self.activity.entry((r, e.at_us / 1_000_000)).or_default() += 1;
        }
        let task_row = self.task_row(e);
        let line = || describe::line(self.plan, i, e);
        let t = e.at_us;
        match &e.event {
            Event::FaultFired { index } => {
                let fault = self.plan.faults.get(*index);
                let row = host_row
                    .or_else(|| fault.and_then(|f| fault_lanes(f, self.lanes).into_iter().next()));
                if let Some(row) = row {
                    self.points
                        .add(row, (Slot::Mark, Glyph::Tick, "ff"), t, line(), None);
                }
                if let (Some(f), Some(row)) = (fault, row) {
                    if matches!(f.kind, FaultKind::Pause { .. }) {
                        self.stall(row, t, f, *index);
                    }
                }
            }
            Event::FaultStarted { index } | Event::FaultEnded { index } => {
                let start = matches!(e.event, Event::FaultStarted { .. });
                if let Some(Fault {
                    kind: FaultKind::Crash { worker },
                    ..
                }) = self.plan.faults.get(*index)
                {
                    if let Some(row) = self.lanes.row(&format!("worker-{worker}")) {
                        let (glyph, class) = if start {
                            (Glyph::Cross, "crash")
                        } else {
                            (Glyph::Up, "restart")
                        };
                        self.points
                            .add(row, (Slot::Mark, glyph, class), t, line(), None);
                    }
                }
            }
            Event::HostStarted => {
                if let Some(row) = host_row {
                    self.points
                        .add(row, (Slot::Mark, Glyph::Up, "up"), t, line(), None);
                }
            }
            Event::Exercised { .. } => {
                if let Some(row) = task_row.or(host_row) {
                    self.points
                        .add(row, (Slot::Mark, Glyph::Tick, "ex"), t, line(), None);
                }
            }
            Event::ThreadCreated { .. } => self.on_host("gateway", Glyph::Square, "thr", t, line()),
            Event::ThreadDeleted { .. } => self.on_host("user", Glyph::Cross, "thd", t, line()),
            Event::Listed { answer, .. } => {
                let class = if answer.is_ok() { "lst" } else { "err" };
                self.on_host("user", Glyph::Square, class, t, line());
            }
            Event::SubmitSent { .. } => {
                self.on_task(task_row, Slot::Mark, Glyph::Square, "sub", t, line())
            }
            Event::SubmitAnswered { answer: Err(_), .. } => {
                self.on_task(task_row, Slot::Mark, Glyph::Tick, "err", t, line())
            }
            Event::CancelSent { .. } => {
                self.on_task(task_row, Slot::Mark, Glyph::Square, "cs", t, line())
            }
            Event::CancelAnswered { .. } => {
                self.on_task(task_row, Slot::Mark, Glyph::Square, "ca", t, line())
            }
            Event::StoreCancel { .. } => {
                self.on_task(task_row, Slot::Mark, Glyph::Square, "cr", t, line())
            }
            Event::RemoteServed { op, answer, .. } => {
                match (served_status(answer), e.task.as_deref()) {
                    (Some(status), Some(label)) if task_row.is_some() => {
                        self.remote_status(label, status, t)
                    }
                    (None, _) => {
                        self.on_task(task_row, Slot::Status, Glyph::Tick, "rerr", t, line())
                    }
                    _ => {}
                }
                if matches!(op, RemoteOp::Cancel) {
                    self.on_task(task_row, Slot::Mark, Glyph::Cross, "rc", t, line());
                }
            }
            Event::PortRemote {
                answered: false, ..
            } => self.on_task(task_row, Slot::Mark, Glyph::Tick, "nx", t, line()),
            Event::LaunchServed { answer, .. } => {
                let class = match answer {
                    LaunchAnswer::Started { .. } => "ls",
                    LaunchAnswer::Busy => "lb",
                    LaunchAnswer::Gone => "lg",
                    _ => "le",
                };
                self.on_task(task_row, Slot::Mark, Glyph::Tri, class, t, line());
            }
            Event::RunEnded { status, .. } => {
                let class = match status {
                    RunStatus::Success => "rs",
                    RunStatus::Error | RunStatus::Timeout | RunStatus::Interrupted => "rf",
                    _ => "ro",
                };
                self.on_task(task_row, Slot::Mark, Glyph::Dot, class, t, line());
            }
            Event::StoreInsert { outcome, .. } => match outcome {
                Ok(v) => {
                    if let Some(label) = e.task.as_deref() {
                        self.versions.insert(label.to_owned(), (*v, None));
                    }
                    self.on_task_labelled(
                        task_row,
                        Glyph::Dia,
                        "ver",
                        t,
                        line(),
                        Some(format!("v{v}")),
                    );
                }
                Err(_) => self.on_task(task_row, Slot::Mark, Glyph::Tick, "err", t, line()),
            },
            Event::StoreClaim {
                lease,
                worker,
                grants,
                dropped,
            } => {
                for g in grants {
                    let Some(label) = self.lanes.task_of_id(&g.task_id) else {
                        continue;
                    };
                    let Some(row) = self.lanes.row(label) else {
                        continue;
                    };
                    let expiry_us = u64::try_from(g.expires_us.saturating_sub(EPOCH_US))
                        .unwrap_or(0)
                        .max(t);
                    let open = OpenLease {
                        row,
                        lane: label.to_owned(),
                        kind: *lease,
                        start_us: t,
                        token: g.token,
                        worker: worker.clone(),
                        expiry_us,
                        dropped: *dropped,
                    };
                    if let Some(prev) = self
                        .leases
                        .insert((g.task_id.clone(), lease.as_str()), open)
                    {
                        let end = prev.expiry_us.min(t);
                        let how = if prev.expiry_us <= t {
                            "expired"
                        } else {
                            "superseded by a new claim"
                        };
                        self.lease_bar(&prev, end, how);
                    }
                }
            }
            Event::StoreWrite { lease, rows, .. } => {
                for r in rows {
                    let Some(label) = self.lanes.task_of_id(&r.task_id) else {
                        continue;
                    };
                    let Some(row) = self.lanes.row(label) else {
                        continue;
                    };
                    let detail = format!(
                        "{} s · #{i} {} · store_write · {} write: {}",
                        secs(t),
                        e.host,
                        lease.as_str(),
                        row_write(r)
                    );
                    match &r.outcome {
                        Ok((event_v, notified_v, status)) => {
                            let notified = Some((*notified_v, status.as_str().to_owned()));
                            let before = self
                                .versions
                                .insert(label.to_owned(), (*event_v, notified.clone()));
                            match before {
                                Some((v, n)) if v == *event_v => {
                                    if n.is_some() && n != notified {
                                        self.points.add(
                                            row,
                                            (Slot::Mark, Glyph::Dia, "nv"),
                                            t,
                                            detail,
                                            None,
                                        );
                                    }
                                }
                                _ => self.points.add(
                                    row,
                                    (Slot::Mark, Glyph::Dia, "ver"),
                                    t,
                                    detail,
                                    Some(format!("v{event_v}")),
                                ),
                            }
                            let key = (r.task_id.clone(), lease.as_str());
                            if self.leases.get(&key).is_some_and(|l| l.token == r.token) {
                                if let Some(l) = self.leases.remove(&key) {
                                    let how = format!("ended by {}", r.action);
                                    self.lease_bar(&l, t, &how);
                                }
                            }
                        }
                        Err(_) => {
                            self.points
                                .add(row, (Slot::Mark, Glyph::Cross, "ref"), t, detail, None)
                        }
                    }
                }
            }
            Event::StoreError { .. } => self.on_host("db", Glyph::Tick, "err", t, line()),
            _ => {}
        }
        if dropped(&e.event) {
            if let Some(row) = host_row {
                self.points
                    .add(row, (Slot::Mark, Glyph::Tick, "drop"), t, line(), None);
            }
        }
    }

    fn on_host(&mut self, host: &str, glyph: Glyph, class: &'static str, t: u64, detail: String) {
        if let Some(row) = self.lanes.row(host) {
            self.points
                .add(row, (Slot::Mark, glyph, class), t, detail, None);
        }
    }

    fn on_task(
        &mut self,
        row: Option<usize>,
        slot: Slot,
        glyph: Glyph,
        class: &'static str,
        t: u64,
        detail: String,
    ) {
        if let Some(row) = row {
            self.points.add(row, (slot, glyph, class), t, detail, None);
        }
    }

    fn on_task_labelled(
        &mut self,
        row: Option<usize>,
        glyph: Glyph,
        class: &'static str,
        t: u64,
        detail: String,
        label: Option<String>,
    ) {
        if let Some(row) = row {
            self.points
                .add(row, (Slot::Mark, glyph, class), t, detail, label);
        }
    }

    /// A remote status served at `t`: a new segment where it differs from the current one.
    fn remote_status(&mut self, label: &str, status: &str, t: u64) {
        if self.status.get(label).is_some_and(|(_, s)| s == status) {
            return;
        }
        if let Some((since, prev)) = self.status.insert(label.to_owned(), (t, status.to_owned())) {
            self.status_segment(label, &prev, since, t);
        }
    }

    fn status_segment(&mut self, label: &str, status: &str, from: u64, to: u64) {
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
            self.status_svg,
            "<rect x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"5\" class=\"st-{class}\"><title>{} · remote status {}: {}–{} s</title></rect>",
            self.geo.top(row) + 2.0,
            (x1 - x0).max(1.0),
            text(label),
            text(status),
            secs(from),
            secs(to)
        );
    }

    fn lease_bar(&mut self, l: &OpenLease, end_us: u64, how: &str) {
        let (x0, x1) = (self.geo.x(l.start_us), self.geo.x(end_us.max(l.start_us)));
        let class = match l.kind {
            LeaseKind::Poll => "lp",
            LeaseKind::Notify => "ln",
            LeaseKind::Cancel => "lc",
        };
        let expired = if how == "expired" { " lx" } else { "" };
        let lost = if l.dropped { " lz" } else { "" };
        let _ = write!(
            self.lease_svg,
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

    /// A pause that took effect at `t`: the lane stalls for the fault's duration.
    fn stall(&mut self, row: usize, t: u64, f: &Fault, index: usize) {
        let end = t.saturating_add(f.for_ms.saturating_mul(1_000));
        let (x0, x1) = (self.geo.x(t), self.geo.x(end));
        let _ = write!(
            self.stall_svg,
            "<rect x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"4\" class=\"stall\"><title>{} · {} ({}) stalled {}–{} s</title></rect>",
            self.geo.top(row) + 16.0,
            (x1 - x0).max(1.5),
            text(self.lanes.names().get(row).map(String::as_str).unwrap_or("")),
            text(&fault_label(self.plan, index)),
            text(&fault_target(f)),
            secs(t),
            secs(end)
        );
    }

    /// Closes what is still open at the end of the history.
    fn finish(&mut self) {
        let end = self.geo.end_us;
        for (label, (since, status)) in std::mem::take(&mut self.status) {
            self.status_segment(&label, &status, since, end);
        }
        for (_, l) in std::mem::take(&mut self.leases) {
            let how = if l.expiry_us <= end {
                "expired"
            } else {
                "held at the end of the history"
            };
            self.lease_bar(&l, l.expiry_us.min(end), how);
        }
    }

    /// Host activity: entries recorded per second, as a run-length strip of three intensities.
    fn activity_svg(&self) -> String {
        let mut out = String::new();
        let mut run: Option<(usize, u64, u64, u8, u32)> = None; // row, first second, last second, level, entries
        let flush = |out: &mut String, r: (usize, u64, u64, u8, u32)| {
            let (row, a, b, level, n) = r;
            let (x0, x1) = (self.geo.x(a * 1_000_000), self.geo.x((b + 1) * 1_000_000));
            let name = self
                .lanes
                .names()
                .get(row)
                .map(String::as_str)
                .unwrap_or("");
            let _ = write!(
                out,
                "<rect x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"3\" class=\"a{level}\"><title>{} · {n} entries in {a}–{} s</title></rect>",
                self.geo.top(row) + 18.0,
                x1 - x0,
                text(name),
                b + 1
            );
        };
        for (&(row, sec), &n) in &self.activity {
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
                    flush(&mut out, prev);
                    Some((row, sec, sec, level, n))
                }
                None => Some((row, sec, sec, level, n)),
            };
        }
        if let Some(prev) = run {
            flush(&mut out, prev);
        }
        out
    }
}

/// Whether the event's reply was dropped after the work was done.
fn dropped(event: &Event) -> bool {
    match event {
        Event::RemoteServed { dropped, .. }
        | Event::LaunchServed { dropped, .. }
        | Event::StoreInsert { dropped, .. }
        | Event::StoreClaim { dropped, .. }
        | Event::StoreWrite { dropped, .. }
        | Event::StoreCancel { dropped, .. } => *dropped,
        _ => false,
    }
}

/// The rows a fault is drawn on: worker faults on that worker's lane, link faults also on the
/// service's lane, service-wide faults on the service lane, latency on every host lane.
fn fault_lanes(f: &Fault, lanes: &Lanes) -> Vec<usize> {
    let names: Vec<String> = match &f.kind {
        FaultKind::Crash { worker }
        | FaultKind::Pause { worker, .. }
        | FaultKind::Skew { worker, .. } => vec![format!("worker-{worker}")],
        FaultKind::Partition { worker, service } | FaultKind::Hold { worker, service } => {
            vec![format!("worker-{worker}"), service.host().to_owned()]
        }
        FaultKind::LoseReplies { service, .. } => vec![service.host().to_owned()],
        FaultKind::Latency { .. } => return (0..lanes.host_count()).collect(),
        FaultKind::GatewayBusy
        | FaultKind::GatewayErrors { .. }
        | FaultKind::LookupErrors
        | FaultKind::LostRuns
        | FaultKind::SlowRuns { .. }
        | FaultKind::BadRuns { .. } => vec!["gateway".to_owned()],
        FaultKind::RemoteErrors | FaultKind::SlowRemote { .. } => vec!["mcp".to_owned()],
    };
    names.iter().filter_map(|n| lanes.row(n)).collect()
}

/// CSS class of a fault band.
fn fault_class(f: &Fault) -> &'static str {
    match f.kind {
        FaultKind::Crash { .. } => "fc",
        FaultKind::Pause { .. } => "fp",
        FaultKind::Partition { .. } | FaultKind::Hold { .. } | FaultKind::LoseReplies { .. } => {
            "fn"
        }
        FaultKind::Latency { .. } => "fl",
        FaultKind::Skew { .. } => "fk",
        FaultKind::RemoteErrors | FaultKind::SlowRemote { .. } => "fr",
        _ => "fg",
    }
}

/// The last instant worth drawing: the last entry, the end of the chaos phase, the end of the
/// last fault window.
pub fn last_us(plan: &Plan, entries: &[Entry]) -> u64 {
    let last_entry = entries.iter().map(|e| e.at_us).max().unwrap_or(0);
    let chaos = plan.chaos_ms.saturating_mul(1_000);
    last_entry.max(chaos).max(1)
}

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
    labels(out, plan, lanes, &geo, &violating);
    let _ = write!(
        out,
        "<div class=\"scroll\"><svg class=\"plot\" width=\"{w:.0}\" height=\"{h:.0}\" viewBox=\"0 0 {w:.0} {h:.0}\" role=\"img\" aria-label=\"timeline\">",
        w = geo.width,
        h = geo.height
    );
    defs(out);
    backgrounds(out, lanes, &geo, &violating);
    axis(out, &geo, entries);
    bands(out, plan, lanes, &geo);

    let mut walk = Walk::new(plan, lanes, &geo);
    for (i, e) in entries.iter().enumerate() {
        walk.entry(i, e);
    }
    walk.finish();
    out.push_str("<g class=\"activity\">");
    out.push_str(&walk.activity_svg());
    out.push_str("</g><g class=\"stalls\">");
    out.push_str(&walk.stall_svg);
    out.push_str("</g><g class=\"status\">");
    out.push_str(&walk.status_svg);
    out.push_str("</g><g class=\"leases\">");
    out.push_str(&walk.lease_svg);
    out.push_str("</g><g class=\"marks\">");
    walk.points.write(out, &geo, lanes);
    out.push_str("</g>");
    violations(out, plan, entries, verdict, lanes, &geo);
    out.push_str("</svg></div></div>");
}

fn defs(out: &mut String) {
    out.push_str("<defs>");
    for g in Glyph::ALL {
        let _ = write!(out, "<path id=\"{}\" d=\"{}\"/>", g.id(), g.path());
    }
    out.push_str("</defs>");
}

/// The label column: one label per lane, task labels titled with the task's plan.
fn labels(out: &mut String, plan: &Plan, lanes: &Lanes, geo: &Geometry, violating: &[usize]) {
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
    let task = name
        .strip_prefix("task-")
        .and_then(|n| n.parse::<u32>().ok())
        .and_then(|n| plan.task(n));
    match (name, task) {
        ("db", _) => "db: the store (claims, leases, versions)".to_owned(),
        ("mcp", _) => "mcp: the remote task server".to_owned(),
        ("gateway", _) => "gateway: the run launcher".to_owned(),
        ("user", _) => "user: submits, cancels, lists, deletes threads".to_owned(),
        (_, Some(t)) => {
            let steps: Vec<String> = t
                .steps
                .iter()
                .map(|s| format!("{:?}@+{} s", s.status, describe::secs(s.after_ms * 1_000)))
                .collect();
            format!(
                "{name}: user-{} thread {}, submitted at {} s; script: {}{}",
                t.owner,
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
        (n, None) if n.starts_with("worker-") => format!("{n}: an engine host"),
        (n, None) => n.to_owned(),
    }
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
        if let Event::Phase { name } = &e.event {
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

/// The plan's faults as translucent bands over the lanes they affect, labelled where wide enough.
fn bands(out: &mut String, plan: &Plan, lanes: &Lanes, geo: &Geometry) {
    out.push_str("<g class=\"faults\">");
    let chaos_us = plan.chaos_ms.saturating_mul(1_000);
    let mut per_row: BTreeMap<usize, usize> = BTreeMap::new();
    for (i, f) in plan.faults.iter().enumerate() {
        let start = f.at_ms.saturating_mul(1_000);
        let end = f
            .at_ms
            .saturating_add(f.for_ms)
            .saturating_mul(1_000)
            .min(chaos_us.max(start));
        let (x0, x1) = (geo.x(start), geo.x(end));
        let width = (x1 - x0).max(2.0);
        let name = fault_name(f);
        // A network-wide fault is one band across all host lanes; others one band per lane.
        let spans: Vec<(usize, usize)> = match f.kind {
            FaultKind::Latency { .. } => vec![(0, lanes.host_count())],
            _ => fault_lanes(f, lanes).into_iter().map(|r| (r, 1)).collect(),
        };
        for (row, n_rows) in spans {
            let nth = per_row.entry(row).or_default();
            let top = geo.top(row);
            let _ = write!(
                out,
                "<rect x=\"{x0:.1}\" y=\"{:.1}\" width=\"{width:.1}\" height=\"{:.0}\" class=\"band {}\"><title>fault #{i} {name} · {} · planned {}–{} s{}</title></rect>",
                top + 1.0,
                LANE_H * n_rows as f64 - 2.0,
                fault_class(f),
                text(&fault_target(f)),
                secs(start),
                secs(f.at_ms.saturating_add(f.for_ms).saturating_mul(1_000)),
                if end < f.at_ms.saturating_add(f.for_ms).saturating_mul(1_000) { " (cut short by the end of the chaos phase)" } else { "" }
            );
            if width >= name.len() as f64 * 4.6 + 6.0 {
                let y = if *nth % 2 == 0 { top + 9.0 } else { top + 20.0 };
                let _ = write!(
                    out,
                    "<text x=\"{:.1}\" y=\"{y:.1}\" class=\"band-t\">{name}</text>",
                    x0 + 2.0
                );
            }
            *nth += 1;
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

/// The legend: every mark and band, with what it means.
pub fn legend(out: &mut String) {
    const ITEMS: [(&str, Option<Glyph>, &str); 30] = [
        ("st-working", None, "remote: working"),
        ("st-input_required", None, "remote: input required"),
        ("st-completed", None, "remote: completed"),
        ("st-failed", None, "remote: failed"),
        ("st-cancelled", None, "remote: cancelled"),
        ("st-other", None, "remote: other status"),
        ("lp", None, "poll lease"),
        ("ln", None, "notify lease"),
        ("lc", None, "cancel lease"),
        ("lp lx", None, "lease ran to expiry"),
        ("ver", Some(Glyph::Dia), "new event version"),
        (
            "nv",
            Some(Glyph::Dia),
            "notified version / notify status moved",
        ),
        ("ref", Some(Glyph::Cross), "store refused a write (fencing)"),
        ("sub", Some(Glyph::Square), "submit"),
        ("ls", Some(Glyph::Tri), "launch: run started"),
        ("lb", Some(Glyph::Tri), "launch: 409 busy"),
        ("lg", Some(Glyph::Tri), "launch: 404 gone"),
        ("le", Some(Glyph::Tri), "launch: error"),
        ("rs", Some(Glyph::Dot), "run succeeded"),
        (
            "rf",
            Some(Glyph::Dot),
            "run failed / timed out / interrupted",
        ),
        ("cs", Some(Glyph::Square), "user cancel sent"),
        ("cr", Some(Glyph::Square), "cancel recorded by the store"),
        ("rc", Some(Glyph::Cross), "remote cancel served"),
        ("rerr", Some(Glyph::Tick), "remote error / unknown task"),
        ("crash", Some(Glyph::Cross), "worker crash"),
        ("up", Some(Glyph::Up), "host (re)started"),
        ("ff", Some(Glyph::Tick), "fault took effect"),
        ("drop", Some(Glyph::Tick), "reply dropped after commit"),
        ("band fn", None, "fault window (band)"),
        ("vmark", None, "violation"),
    ];
    const PER_ROW: usize = 5;
    const COL_W: f64 = 236.0;
    let rows = ITEMS.len().div_ceil(PER_ROW);
    let (w, h) = (COL_W * PER_ROW as f64, rows as f64 * 18.0 + 4.0);
    let _ = write!(
        out,
        "<svg class=\"legend\" width=\"{w:.0}\" height=\"{h:.0}\" viewBox=\"0 0 {w:.0} {h:.0}\">"
    );
    defs_legend(out);
    for (i, (class, glyph, what)) in ITEMS.iter().enumerate() {
        let x = (i % PER_ROW) as f64 * COL_W + 8.0;
        let y = (i / PER_ROW) as f64 * 18.0 + 12.0;
        match (glyph, *class) {
            (Some(g), _) => {
                let _ = write!(
                    out,
                    "<use href=\"#l{}\" x=\"{x:.0}\" y=\"{:.0}\" class=\"{class}\"/>",
                    g.id(),
                    y - 3.0
                );
            }
            (None, "vmark") => {
                let _ = write!(
                    out,
                    "<circle cx=\"{x:.0}\" cy=\"{:.0}\" r=\"6\" class=\"vmark\"/>",
                    y - 3.0
                );
            }
            (None, _) => {
                let _ = write!(
                    out,
                    "<rect x=\"{:.0}\" y=\"{:.0}\" width=\"14\" height=\"6\" class=\"{class}\"/>",
                    x - 7.0,
                    y - 6.0
                );
            }
        }
        let _ = write!(
            out,
            "<text x=\"{:.0}\" y=\"{y:.0}\" class=\"leg-t\">{what}</text>",
            x + 12.0
        );
    }
    out.push_str("</svg>");
}

/// The legend's own copies of the glyphs (ids prefixed `l`, so the page has no duplicate ids).
fn defs_legend(out: &mut String) {
    out.push_str("<defs>");
    for g in Glyph::ALL {
        let _ = write!(out, "<path id=\"l{}\" d=\"{}\"/>", g.id(), g.path());
    }
    out.push_str("</defs>");
}
