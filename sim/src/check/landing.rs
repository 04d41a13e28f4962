//! Where runs land (DOMAIN §3 "Delivery", §9): every run the gateway created is on its task's
//! own thread, for the task's owner, and never on a thread whose deletion the gateway had
//! already acknowledged.
//!
//! Read from the gateway's record of each create (the key names the task; the plan names the
//! task's owner and thread) and the users' record of acknowledged deletions.

use super::facts::Facts;
use super::{Invariant, Verdict};
use crate::history::{parse_key, Seen};
use crate::plan::naming::{owner_name, thread_name};
use std::collections::BTreeSet;

pub(super) fn check(f: &Facts<'_>, v: &mut Verdict) {
    let mut deleted: BTreeSet<(&str, &str)> = BTreeSet::new();
    for (i, e) in f.entries.iter().enumerate() {
        match &e.event {
            Seen::ThreadDeleted { owner, thread } => {
                deleted.insert((owner, thread));
            }
            Seen::LaunchServed {
                key,
                owner,
                thread,
                created_run: Some(run),
                ..
            } => {
                let Some((task_id, _, _)) = parse_key(key) else {
                    continue;
                };
                let Some(n) = f.n_of.get(task_id) else {
                    continue;
                };
                let Some(t) = f.plan.task(*n) else {
                    continue;
                };
                let (own_owner, own_thread) = (owner_name(t.owner), thread_name(t.owner, t.thread));
                if (owner.as_str(), thread.as_str()) != (own_owner.as_str(), own_thread.as_str()) {
                    v.push(
                        Invariant::Isolated,
                        f.label(task_id),
                        Some(i),
                        format!("run {run} started for {owner} on {thread}, not on the task's own thread"),
                    );
                }
                if deleted.contains(&(owner.as_str(), thread.as_str())) {
                    v.push(
                        Invariant::Fenced,
                        f.label(task_id),
                        Some(i),
                        format!(
                            "run {run} started on {thread} after its deletion was acknowledged"
                        ),
                    );
                }
            }
            _ => {}
        }
    }
}
