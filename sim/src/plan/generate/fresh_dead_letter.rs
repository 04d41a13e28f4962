//! A fresh dead letter under retention: on two seeds in five, the owner deletes a task's thread
//! just before the task's script ends, so the notification of its end meets a deleted thread
//! and becomes a dead letter; the operator requeues it half a minute to a minute later — past
//! the ordinary retention age of a finished row ([`crate::plan::timing::RETENTION_AFTER`]),
//! well within the dead-letter age. Retention runs on these seeds, so its passes meet a
//! finished row that only the dead-letter age keeps (DOMAIN §10): a dead letter pruned like any
//! row shows as a requeue that finds nothing.

use super::LAST_MS;
use crate::plan::{TaskPlan, UserAction};
use rand::seq::IndexedRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// The requeue comes this long after the script's end at the latest.
const REQUEUE_AFTER_MAX_MS: u64 = 65_000;

/// The thread deletion and the requeue of one task, or `None` on the other seeds (or when no
/// task's script ends with a terminal status early enough for the requeue).
pub(super) fn draw(rng: &mut ChaCha8Rng, tasks: &[TaskPlan]) -> Option<[UserAction; 2]> {
    if !rng.random_bool(0.4) {
        return None;
    }
    let ends: Vec<(&TaskPlan, u64)> = tasks
        .iter()
        .filter_map(|t| {
            let last = t.steps.last()?;
            let end = t.submit_at_ms + last.after_ms;
            let ends_early = end + REQUEUE_AFTER_MAX_MS < LAST_MS;
            (last.status.is_terminal() && last.after_ms >= 2_000 && ends_early).then_some((t, end))
        })
        .collect();
    let &(t, end) = ends.choose(rng)?;
    let delete = UserAction::DeleteThread {
        owner: t.owner,
        thread: t.thread,
        at_ms: end - rng.random_range(500..2_000),
    };
    let requeue = UserAction::Requeue {
        task: t.n,
        at_ms: end + rng.random_range(35_000..REQUEUE_AFTER_MAX_MS),
    };
    Some([delete, requeue])
}
