//! A repeat changes nothing (DOMAIN §6): once a task's cancel work has ended — the server
//! acknowledged the cancel, answered it with a terminal snapshot, or its budget was spent — a
//! repeated cancel request sends no further remote cancel. The simulation never requeues a
//! cancel dead letter, so no cancel of that task's remote task may start after the store
//! accepted the write that ended the work.
//!
//! Read from the store's accepted cancel-lease writes and the worker ports' remote calls. Only
//! remote tasks held by one stored task are judged: a handle the server handed to two submits
//! carries two rows' cancel work.

use super::facts::Facts;
use super::{Invariant, Verdict};
use crate::history::{RemoteOp, Seen};
use crate::plan::naming::task_label;
use std::collections::BTreeMap;
use tasklatch_core::lease::LeaseKind;

pub(super) fn check(f: &Facts<'_>, v: &mut Verdict) {
    // Remote id → (history index, time) of the accepted write that ended its cancel work.
    let mut ended: BTreeMap<&str, (usize, u64)> = BTreeMap::new();
    for (i, e) in f.entries.iter().enumerate() {
        match &e.event {
            Seen::StoreWrite {
                lease: LeaseKind::Cancel,
                rows,
                ..
            } => {
                for r in rows
                    .iter()
                    .filter(|r| r.outcome.is_ok() && r.action.ends_cancel())
                {
                    if let Some(remote) = sole_remote(f, &r.task_id) {
                        ended.entry(remote).or_insert((i, e.at_us));
                    }
                }
            }
            Seen::PortRemote {
                lane,
                remote_id,
                op: RemoteOp::Cancel,
                started_us,
                ..
            } => {
                let Some(&(end, end_us)) = ended.get(remote_id.as_str()) else {
                    continue;
                };
                if *started_us > end_us {
                    v.push(
                        Invariant::Fenced,
                        f.n_of_remote.get(remote_id.as_str()).map(|n| task_label(*n)),
                        Some(i),
                        format!(
                            "{lane} started a remote cancel {} ms after the cancel work ended (entry {end}): a repeated request restarted it",
                            (*started_us - end_us) / 1_000
                        ),
                    );
                }
            }
            _ => {}
        }
    }
}

/// The remote id of stored task `task_id`, when no other task holds it.
fn sole_remote<'a>(f: &Facts<'a>, task_id: &str) -> Option<&'a str> {
    let n = f.n_of.get(task_id)?;
    let remote = *f.held.get(n)?;
    f.held_alone(remote).then_some(remote)
}
