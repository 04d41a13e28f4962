//! Orphaned remote work (DOMAIN §7): a remote task whose row the store refused for good is
//! cancelled by the submit that started it (the compensation), unless another stored row holds
//! its handle.
//!
//! Read from the remote host's record of what it created (and handed again), the store's
//! answers to inserts as the user's engine got them, and the user host's remote calls: after a
//! definitive refusal (`invalid input`, a reply that was not dropped) of the submitting task's
//! row, a cancel of its remote task by the user host must follow. Whether that cancel succeeded
//! is the remote's business (it is retried a bounded number of times); that it was tried is not.

use super::facts::Facts;
use super::{Invariant, Verdict};
use crate::history::{RemoteOp, Seen};
use crate::plan::naming::{task_label, USER_HOST};

pub(super) fn check(f: &Facts<'_>, v: &mut Verdict) {
    for (&n, &remote_id) in &f.held {
        let Some(task_id) = f.task_ids.get(&n).copied() else {
            continue;
        };
        if f.holder_ids(remote_id).any(|id| f.inserted.contains(id)) {
            continue;
        }
        let Some(refused) = f.refused_for_good(task_id) else {
            continue;
        };
        let cancelled = f.entries[refused..].iter().any(|e| {
            matches!(&e.event, Seen::PortRemote {
                lane,
                remote_id: r,
                op: RemoteOp::Cancel,
                ..
            } if lane == USER_HOST && r == remote_id)
        });
        if !cancelled {
            v.push(
                Invariant::Isolated,
                Some(task_label(n)),
                Some(refused),
                "the store refused the task's row and its remote task was never cancelled (orphaned remote work)",
            );
        }
    }
}
