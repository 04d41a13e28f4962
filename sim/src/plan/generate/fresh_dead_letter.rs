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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::generate::{generate, Knobs, Stream};
    use crate::plan::timing::{DEAD_LETTERS_AFTER, RETENTION_AFTER};

    #[test]
    fn two_seeds_in_five_delete_a_thread_just_before_its_task_ends_and_requeue_after_retention_age()
    {
        let mut drawn = 0;
        for seed in 0..200 {
            let plan = generate(seed, &Knobs::default());
            let rng = &mut Stream::FreshDeadLetter.rng(seed);
            let Some([delete, requeue]) = draw(rng, &plan.tasks) else {
                continue;
            };
            drawn += 1;
            let (
                UserAction::DeleteThread { at_ms: deleted, .. },
                UserAction::Requeue { task, at_ms },
            ) = (delete, requeue)
            else {
                panic!("seed {seed}: a deletion and a requeue, in this order");
            };
            let t = plan
                .task(task)
                .unwrap_or_else(|| panic!("seed {seed}: task {task}"));
            let end = t.submit_at_ms + t.steps.last().map_or(0, |s| s.after_ms);
            assert!(
                (end - 2_000..end - 500 + 1).contains(&deleted),
                "seed {seed}"
            );
            let after = at_ms - end;
            let retention = RETENTION_AFTER.as_millis() as u64;
            let dead_letters = DEAD_LETTERS_AFTER.as_millis() as u64;
            assert!(
                after > retention && after < dead_letters,
                "seed {seed}: {after} ms"
            );
            assert!(at_ms < LAST_MS, "seed {seed}");
        }
        assert!((50..=110).contains(&drawn), "{drawn} of 200 seeds");
    }
}
