//! News while the thread is busy: on three seeds in five, a task's script changes status three
//! times within 6-10 s, polled every second, and the runs started around its first change take
//! 15-25 s. Its second state's launch meets a 409 (its own first run still holds the thread)
//! and its third state lands while that 409's snapshot is waiting: the next launch must carry
//! the latest event, not the snapshot the 409 met (`busy-delivers-stale-snapshot`).

use crate::plan::fault::{Fault, FaultKind};
use crate::plan::TaskPlan;
use rand::seq::IndexedRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// The slow-runs window over the first change of three close ones of one task (whose later
/// two steps move closer and whose hint becomes one second), or `None` on the other seeds or
/// when no script has three steps.
pub(super) fn draw(rng: &mut ChaCha8Rng, tasks: &mut [TaskPlan]) -> Option<Fault> {
    if !rng.random_bool(0.6) {
        return None;
    }
    let three: Vec<(usize, usize)> = tasks
        .iter()
        .enumerate()
        .flat_map(|(i, t)| (0..t.steps.len().saturating_sub(2)).map(move |s| (i, s)))
        .collect();
    let &(i, s) = three.choose(rng)?;
    let t = &mut tasks[i];
    let first = t.steps[s].after_ms;
    let second = first + rng.random_range(3_000..5_000);
    let third = second + rng.random_range(3_000..5_000);
    if t.steps
        .get(s + 3)
        .is_some_and(|next| next.after_ms <= third)
    {
        return None;
    }
    t.steps[s + 1].after_ms = second;
    t.steps[s + 2].after_ms = third;
    t.hint_secs = Some(1.0);
    Some(Fault {
        at_ms: t.submit_at_ms + first,
        for_ms: 3_000,
        kind: FaultKind::SlowRuns {
            run_ms: rng.random_range(15_000..25_000),
        },
    })
}
