//! Fencing invariants, read from what the store answered and what worker ports did:
//! no write from an expired or superseded lease, no poll result while a cancel is in progress
//! nor from a poll claimed before the cancel work ended, never
//! two concurrent remote cancels of a task, never two concurrent remote polls (status or answer
//! calls, both made under the poll lease) of a task, no stale snapshot after a 409, no retry
//! after a 404.
//!
//! Concurrent calls are read from the call windows the worker ports saw (start to answer or
//! deadline), not from the leases: a worker whose clock runs far ahead takes a lease it sees as
//! expired while its holder's call still runs, and both calls then reach the server at once.

use super::facts::Facts;
use super::{Invariant, Verdict};
use crate::history::write_action::WriteAction;
use crate::history::{parse_key, RemoteOp, Seen};
use crate::plan::naming::task_label;
use std::collections::{BTreeMap, BTreeSet};
use tasklatch_core::lease::LeaseKind;
use tasklatch_core::store::CancelOutcome;

pub(super) fn check(f: &Facts<'_>, v: &mut Verdict) {
    leases(f, v);
    poll_after_cancel(f, v);
    concurrent_calls(
        f,
        v,
        &[RemoteOp::Cancel],
        "two remote cancels of one task were in progress at once",
    );
    concurrent_calls(
        f,
        v,
        &[RemoteOp::Status, RemoteOp::Answer],
        "two remote polls of one task were in progress at once",
    );
    after_busy_and_gone(f, v);
}

fn leases(f: &Facts<'_>, v: &mut Verdict) {
    let mut latest: BTreeMap<(&str, LeaseKind), u64> = BTreeMap::new();
    let mut expiry: BTreeMap<(&str, LeaseKind, u64), i64> = BTreeMap::new();
    for (i, e) in f.entries.iter().enumerate() {
        match &e.event {
            Seen::StoreClaim { lease, grants, .. } => {
                for g in grants {
                    latest.insert((g.task_id.as_str(), *lease), g.token);
                    expiry.insert((g.task_id.as_str(), *lease, g.token), g.expires_us);
                }
            }
            Seen::StoreWrite { lease, rows, .. } => {
                for r in rows.iter().filter(|r| r.outcome.is_ok()) {
                    let key = (r.task_id.as_str(), *lease);
                    if latest.get(&key).is_some_and(|t| *t > r.token) {
                        v.push(
                            Invariant::Fenced,
                            f.label(&r.task_id),
                            Some(i),
                            format!(
                                "a {} write with superseded {} token {} took effect",
                                r.action,
                                lease.as_str(),
                                r.token
                            ),
                        );
                    }
                    if expiry
                        .get(&(key.0, key.1, r.token))
                        .is_some_and(|exp| r.at_us >= *exp)
                    {
                        v.push(
                            Invariant::Fenced,
                            f.label(&r.task_id),
                            Some(i),
                            format!(
                                "a {} write from an expired {} lease took effect",
                                r.action,
                                lease.as_str()
                            ),
                        );
                    }
                }
            }
            _ => {}
        }
    }
}

/// No poll result applies while a task's cancel work is in progress, nor afterwards from a
/// poll claimed before the cancel work ended. Polling resumes after a cancel the server only
/// acknowledged or whose budget was spent: a poll result is allowed when its claim was granted
/// after the store accepted the write that ended the cancel work (a cancel-lease write named
/// `cancel_finished`, `cancel_acknowledged` or `cancel_budget_exhausted`), i.e. its token is
/// above every poll token granted before that write.
fn poll_after_cancel(f: &Facts<'_>, v: &mut Verdict) {
    let mut cancelled: BTreeSet<String> = BTreeSet::new();
    let mut latest_poll: BTreeMap<String, u64> = BTreeMap::new();
    // Per task whose cancel work ended: the newest poll token granted before it ended.
    let mut ended: BTreeMap<String, u64> = BTreeMap::new();
    for (i, e) in f.entries.iter().enumerate() {
        match &e.event {
            Seen::StoreCancel {
                outcome: CancelOutcome::Requested(id),
                ..
            } => {
                cancelled.insert(id.to_string());
            }
            Seen::StoreClaim {
                lease: LeaseKind::Poll,
                grants,
                ..
            } => {
                for g in grants {
                    latest_poll.insert(g.task_id.clone(), g.token);
                }
            }
            Seen::StoreWrite {
                lease: LeaseKind::Cancel,
                rows,
                ..
            } => {
                for r in rows
                    .iter()
                    .filter(|r| r.outcome.is_ok() && r.action.ends_cancel())
                {
                    let floor = latest_poll.get(&r.task_id).copied().unwrap_or(0);
                    ended.entry(r.task_id.clone()).or_insert(floor);
                }
            }
            Seen::StoreWrite {
                lease: LeaseKind::Poll,
                rows,
                ..
            } => {
                for r in rows.iter().filter(|r| {
                    r.outcome.is_ok()
                        && r.action == WriteAction::ApplyPoll
                        && cancelled.contains(&r.task_id)
                }) {
                    let what = match ended.get(&r.task_id) {
                        Some(floor) if r.token > *floor => continue,
                        Some(_) => "a poll claimed before its cancel work ended applied its result",
                        None => "a poll result was applied while a cancel was in progress",
                    };
                    v.push(Invariant::Fenced, f.label(&r.task_id), Some(i), what);
                }
            }
            _ => {}
        }
    }
}

/// Worker calls of one of `ops` about one remote task never overlap in time (each is made under
/// one lease of the same kind, and a lease is held by one claim at a time).
fn concurrent_calls(f: &Facts<'_>, v: &mut Verdict, ops: &[RemoteOp], what: &str) {
    let mut calls: BTreeMap<&str, Vec<(u64, u64, usize)>> = BTreeMap::new();
    for (i, e) in f.entries.iter().enumerate() {
        if let Seen::PortRemote {
            lane,
            remote_id,
            op,
            started_us,
            ..
        } = &e.event
        {
            if lane.starts_with("worker-") && ops.contains(op) {
                calls
                    .entry(remote_id.as_str())
                    .or_default()
                    .push((*started_us, e.at_us, i));
            }
        }
    }
    for (remote_id, mut spans) in calls {
        spans.sort();
        for pair in spans.windows(2) {
            let ((_, end_a, _), (start_b, _, entry_b)) = (pair[0], pair[1]);
            if start_b < end_a {
                let task = f.n_of_remote.get(remote_id).map(|n| task_label(*n));
                v.push(Invariant::Fenced, task, Some(entry_b), what);
            }
        }
    }
}

fn after_busy_and_gone(f: &Facts<'_>, v: &mut Verdict) {
    let mut max_version: BTreeMap<&str, u64> = BTreeMap::new();
    let mut floor: BTreeMap<&str, (u64, usize)> = BTreeMap::new();
    let mut gone: BTreeSet<(&str, u64)> = BTreeSet::new();
    for (i, e) in f.entries.iter().enumerate() {
        match &e.event {
            Seen::StoreInsert {
                task_id,
                outcome: Ok(ev),
                ..
            } => {
                max_version.insert(task_id, *ev);
            }
            Seen::StoreWrite { rows, .. } => {
                for r in rows {
                    let Ok((ev, _, _)) = r.outcome else { continue };
                    let m = max_version.entry(r.task_id.as_str()).or_default();
                    *m = (*m).max(ev);
                    match (r.action, r.version) {
                        (WriteAction::Busy, _) => {
                            floor.insert(r.task_id.as_str(), (*m, i));
                        }
                        (WriteAction::ThreadGone, Some(ver)) => {
                            gone.insert((r.task_id.as_str(), ver));
                        }
                        _ => {}
                    }
                }
            }
            Seen::LaunchServed { key, .. } => {
                let Some((task_id, version, _)) = parse_key(key) else {
                    continue;
                };
                if let Some((min, since)) = floor.remove(task_id) {
                    if version < min {
                        v.push(Invariant::Fenced, f.label(task_id), Some(i), format!("after a 409 (entry {since}) the stale version {version} was launched although version {min} existed"));
                    }
                }
                if gone.contains(&(task_id, version)) {
                    v.push(
                        Invariant::Fenced,
                        f.label(task_id),
                        Some(i),
                        format!(
                            "version {version} was launched again after its thread was gone (404)"
                        ),
                    );
                }
            }
            _ => {}
        }
    }
}
