//! The walk: one pass over the history that turns each entry into what the timeline draws —
//! point marks, remote-status segments, lease bars, stalls and host activity.
//!
//! Contract: entries that name unknown lanes, tasks or faults draw nothing (never a panic);
//! every entry recorded by a host counts towards that host's activity; marks keep the order of
//! the history inside each merged mark.

use super::activity::Activity;
use super::bands::fault_rows;
use super::describe::{self, fault_label, row_write, secs, served_status};
use super::escape::text;
use super::geometry::Geometry;
use super::lanes::Lanes;
use super::leases::{LeaseBars, OpenLease};
use super::marks::{Glyph, Points, Slot};
use super::status::StatusStrip;
use crate::history::{Entry, Grant, LaunchAnswer, RemoteOp, RowWrite, Seen};
use crate::plan::fault::Fault;
use crate::plan::naming::worker_host;
use crate::plan::timing::EPOCH_SECS;
use crate::plan::Plan;
use crate::wire::mcp::McpAnswer;
use std::collections::BTreeMap;
use std::fmt::Write;
use tasklatch_core::lease::LeaseKind;
use tasklatch_core::ports::RunStatus;

/// Epoch microseconds of simulated time zero (lease expiries are in engine time).
const EPOCH_US: i64 = EPOCH_SECS as i64 * 1_000_000;

/// The lane a simple mark goes on.
#[derive(Copy, Clone)]
enum Lane {
    /// The lane of this host.
    Host(&'static str),
    /// The lane of the host that recorded the entry.
    Recorder,
    /// The lane of the entry's task.
    Task,
    /// The task's lane, else the recorder's.
    TaskElseRecorder,
}

/// A simple mark: where, in which slot, which glyph, which CSS class.
type Look = (Lane, Slot, Glyph, &'static str);

/// Everything drawn from the history in one pass.
pub struct Walk<'a> {
    plan: &'a Plan,
    lanes: &'a Lanes,
    geo: &'a Geometry,
    points: Points,
    statuses: StatusStrip<'a>,
    leases: LeaseBars<'a>,
    stalls: String,
    /// task label → (event version, (notified version, notify status)) last written; the
    /// notified part is unknown after an insert.
    versions: BTreeMap<String, (u64, Option<(u64, String)>)>,
    activity: Activity,
}

/// Walks `entries` and writes the drawn groups: activity, stalls, statuses, leases, marks.
pub fn render(out: &mut String, plan: &Plan, entries: &[Entry], lanes: &Lanes, geo: &Geometry) {
    let mut walk = Walk {
        plan,
        lanes,
        geo,
        points: Points::default(),
        statuses: StatusStrip::new(geo, lanes),
        leases: LeaseBars::new(geo),
        stalls: String::new(),
        versions: BTreeMap::new(),
        activity: Activity::default(),
    };
    for (i, e) in entries.iter().enumerate() {
        walk.entry(i, e);
    }
    walk.statuses.finish(geo.end_us);
    walk.leases.finish(geo.end_us);
    out.push_str("<g class=\"activity\">");
    out.push_str(&walk.activity.svg(geo, lanes));
    out.push_str("</g><g class=\"stalls\">");
    out.push_str(&walk.stalls);
    out.push_str("</g><g class=\"status\">");
    out.push_str(&walk.statuses.svg);
    out.push_str("</g><g class=\"leases\">");
    out.push_str(&walk.leases.svg);
    out.push_str("</g><g class=\"marks\">");
    walk.points.write(out, geo, lanes);
    out.push_str("</g>");
}

impl Walk<'_> {
    fn task_row(&self, e: &Entry) -> Option<usize> {
        e.task.as_deref().and_then(|t| self.lanes.row(t))
    }

    fn entry(&mut self, i: usize, e: &Entry) {
        let host_row = self.lanes.row(&e.host);
        if let Some(r) = host_row {
            self.activity.count(r, e.at_us);
        }
        let plan = self.plan;
        let line = || describe::line(plan, i, e);
        let t = e.at_us;
        match &e.event {
            Seen::FaultFired { index } => self.fault_fired(*index, host_row, t, &line),
            Seen::FaultStarted { index } => self.fault_window(*index, true, t, &line),
            Seen::FaultEnded { index } => self.fault_window(*index, false, t, &line),
            Seen::RemoteServed { op, answer, .. } => self.served(e, *op, answer, &line),
            Seen::StoreInsert { outcome, .. } => self.inserted(e, outcome, &line),
            Seen::StoreClaim {
                lease,
                worker,
                grants,
                dropped,
            } => self.claimed(*lease, worker, grants, *dropped, t),
            Seen::StoreWrite { lease, rows, .. } => self.written(i, e, *lease, rows),
            event => {
                if let Some(look) = simple(event) {
                    self.simple(look, host_row, self.task_row(e), t, &line);
                }
            }
        }
        if dropped(&e.event) {
            if let Some(row) = host_row {
                self.points
                    .add(row, (Slot::Mark, Glyph::Tick, "drop"), t, line(), None);
            }
        }
    }

    fn simple(
        &mut self,
        (lane, slot, glyph, class): Look,
        host_row: Option<usize>,
        task_row: Option<usize>,
        t: u64,
        line: &dyn Fn() -> String,
    ) {
        let row = match lane {
            Lane::Host(host) => self.lanes.row(host),
            Lane::Recorder => host_row,
            Lane::Task => task_row,
            Lane::TaskElseRecorder => task_row.or(host_row),
        };
        if let Some(row) = row {
            self.points.add(row, (slot, glyph, class), t, line(), None);
        }
    }

    /// A fault took effect: a tick on the recording host's lane (else the fault's first
    /// lane), and a stall bar if the fault stalls the lane.
    fn fault_fired(
        &mut self,
        index: usize,
        host_row: Option<usize>,
        t: u64,
        line: &dyn Fn() -> String,
    ) {
        let fault = self.plan.faults.get(index);
        let row =
            host_row.or_else(|| fault.and_then(|f| fault_rows(f, self.lanes).into_iter().next()));
        if let Some(row) = row {
            self.points
                .add(row, (Slot::Mark, Glyph::Tick, "ff"), t, line(), None);
        }
        if let (Some(f), Some(row)) = (fault, row) {
            if f.kind.look().stall {
                self.stall(row, t, f, index);
            }
        }
    }

    /// A fault window began or ended: marked on the worker lane for kinds that mark it.
    fn fault_window(&mut self, index: usize, start: bool, t: u64, line: &dyn Fn() -> String) {
        let Some(f) = self.plan.faults.get(index) else {
            return;
        };
        let worker = f.kind.target().worker();
        let Some(w) = worker.filter(|_| f.kind.look().window_marks) else {
            return;
        };
        if let Some(row) = self.lanes.row(&worker_host(w)) {
            let (glyph, class) = if start {
                (Glyph::Cross, "crash")
            } else {
                (Glyph::Up, "restart")
            };
            self.points
                .add(row, (Slot::Mark, glyph, class), t, line(), None);
        }
    }

    /// The remote server served a task: its status strip, or an error tick; a remote cancel.
    fn served(&mut self, e: &Entry, op: RemoteOp, answer: &McpAnswer, line: &dyn Fn() -> String) {
        let (task_row, t) = (self.task_row(e), e.at_us);
        if matches!(op, RemoteOp::Answer) {
            let class = if matches!(answer, McpAnswer::AnswerTaken) {
                "ra"
            } else {
                "rerr"
            };
            self.on_task(task_row, (Slot::Mark, Glyph::Square, class), t, line());
            return;
        }
        match (served_status(answer), e.task.as_deref()) {
            (Some(status), Some(label)) if task_row.is_some() => {
                self.statuses.served(label, status, t)
            }
            (None, _) => self.on_task(task_row, (Slot::Status, Glyph::Tick, "rerr"), t, line()),
            _ => {}
        }
        if matches!(op, RemoteOp::Cancel) {
            self.on_task(task_row, (Slot::Mark, Glyph::Cross, "rc"), t, line());
        }
    }

    /// The store inserted a task: its first event version, or a refusal.
    fn inserted(&mut self, e: &Entry, outcome: &Result<u64, String>, line: &dyn Fn() -> String) {
        let (task_row, t) = (self.task_row(e), e.at_us);
        match outcome {
            Ok(v) => {
                if let Some(label) = e.task.as_deref() {
                    self.versions.insert(label.to_owned(), (*v, None));
                }
                if let Some(row) = task_row {
                    let label = Some(format!("v{v}"));
                    self.points
                        .add(row, (Slot::Mark, Glyph::Dia, "ver"), t, line(), label);
                }
            }
            Err(_) => self.on_task(task_row, (Slot::Mark, Glyph::Tick, "err"), t, line()),
        }
    }

    /// The store granted leases: each opens a lease bar on its task's lane.
    fn claimed(&mut self, kind: LeaseKind, worker: &str, grants: &[Grant], dropped: bool, t: u64) {
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
                kind,
                start_us: t,
                token: g.token,
                worker: worker.to_owned(),
                expiry_us,
                dropped,
            };
            self.leases.grant(&g.task_id, open);
        }
    }

    /// The store answered a batched write: per row a version move and the end of its lease,
    /// or a refusal.
    fn written(&mut self, i: usize, e: &Entry, kind: LeaseKind, rows: &[RowWrite]) {
        let t = e.at_us;
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
                kind.as_str(),
                row_write(r)
            );
            match &r.outcome {
                Ok((event_v, notified_v, status)) => {
                    let notified = (*notified_v, status.as_str().to_owned());
                    self.version(row, label, *event_v, notified, t, detail);
                    self.leases.written(&r.task_id, kind, r.token, t, r.action);
                }
                Err(_) => self
                    .points
                    .add(row, (Slot::Mark, Glyph::Cross, "ref"), t, detail, None),
            }
        }
    }

    /// A write left the task at `event_v` / `notified`: a black diamond for a new event
    /// version, a grey one where only the notified version or notify status moved.
    fn version(
        &mut self,
        row: usize,
        label: &str,
        event_v: u64,
        notified: (u64, String),
        t: u64,
        detail: String,
    ) {
        let notified = Some(notified);
        let before = self
            .versions
            .insert(label.to_owned(), (event_v, notified.clone()));
        match before {
            Some((v, n)) if v == event_v => {
                if n.is_some() && n != notified {
                    self.points
                        .add(row, (Slot::Mark, Glyph::Dia, "nv"), t, detail, None);
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
    }

    fn on_task(
        &mut self,
        row: Option<usize>,
        look: (Slot, Glyph, &'static str),
        t: u64,
        detail: String,
    ) {
        if let Some(row) = row {
            self.points.add(row, look, t, detail, None);
        }
    }

    /// A pause that took effect at `t`: the lane stalls for the fault's duration.
    fn stall(&mut self, row: usize, t: u64, f: &Fault, index: usize) {
        let end = t.saturating_add(f.for_ms.saturating_mul(1_000));
        let (x0, x1) = (self.geo.x(t), self.geo.x(end));
        let _ = write!(
            self.stalls,
            "<rect x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"4\" class=\"stall\"><title>{} · {} ({}) stalled {}–{} s</title></rect>",
            self.geo.top(row) + 16.0,
            (x1 - x0).max(1.5),
            text(self.lanes.names().get(row).map(String::as_str).unwrap_or("")),
            text(&fault_label(self.plan, index)),
            text(&f.kind.detail()),
            secs(t),
            secs(end)
        );
    }
}

/// How an entry without state of its own is marked, if it is.
fn simple(event: &Seen) -> Option<Look> {
    let task = |glyph, class| (Lane::Task, Slot::Mark, glyph, class);
    Some(match event {
        Seen::HostStarted => (Lane::Recorder, Slot::Mark, Glyph::Up, "up"),
        Seen::Exercised { .. } => (Lane::TaskElseRecorder, Slot::Mark, Glyph::Tick, "ex"),
        Seen::RowRuleBroken { .. } => (Lane::TaskElseRecorder, Slot::Mark, Glyph::Cross, "err"),
        Seen::ThreadCreated { .. } => (Lane::Host("gateway"), Slot::Mark, Glyph::Square, "thr"),
        Seen::ThreadDeleted { .. } => (Lane::Host("user"), Slot::Mark, Glyph::Cross, "thd"),
        Seen::Listed { answer, .. } => {
            let class = if answer.is_ok() { "lst" } else { "err" };
            (Lane::Host("user"), Slot::Mark, Glyph::Square, class)
        }
        Seen::ContextRead { answer, .. } => {
            let class = if answer.is_ok() { "lst" } else { "err" };
            (Lane::Host("user"), Slot::Mark, Glyph::Square, class)
        }
        Seen::StoreError { .. } => (Lane::Host("db"), Slot::Mark, Glyph::Tick, "err"),
        Seen::SubmitSent { .. } => task(Glyph::Square, "sub"),
        Seen::SubmitAnswered { answer: Err(_), .. } => task(Glyph::Tick, "err"),
        Seen::CancelSent { .. } => task(Glyph::Square, "cs"),
        Seen::CancelAnswered { .. } => task(Glyph::Square, "ca"),
        Seen::StoreCancel { .. } => task(Glyph::Square, "cr"),
        Seen::StoreRequeue { .. } => task(Glyph::Square, "rq"),
        Seen::AnswerSent { .. } => task(Glyph::Square, "as"),
        Seen::PortRemote {
            answered: false, ..
        } => task(Glyph::Tick, "nx"),
        Seen::LaunchServed { answer, .. } => task(Glyph::Tri, launch_class(answer)),
        Seen::RunEnded { status, .. } => task(Glyph::Dot, run_class(*status)),
        _ => return None,
    })
}

fn launch_class(answer: &LaunchAnswer) -> &'static str {
    match answer {
        LaunchAnswer::Started { .. } => "ls",
        LaunchAnswer::Busy => "lb",
        LaunchAnswer::Gone => "lg",
        LaunchAnswer::Error => "le",
    }
}

fn run_class(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Success => "rs",
        RunStatus::Error | RunStatus::Timeout | RunStatus::Interrupted => "rf",
        _ => "ro",
    }
}

/// Whether the event's reply was dropped after the work was done.
fn dropped(event: &Seen) -> bool {
    match event {
        Seen::RemoteServed { dropped, .. }
        | Seen::LaunchServed { dropped, .. }
        | Seen::StoreInsert { dropped, .. }
        | Seen::StoreClaim { dropped, .. }
        | Seen::StoreWrite { dropped, .. }
        | Seen::StoreCancel { dropped, .. }
        | Seen::StoreRequeue { dropped, .. } => *dropped,
        _ => false,
    }
}
