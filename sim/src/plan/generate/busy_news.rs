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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::generate::{generate, Knobs, Stream};

    #[test]
    fn three_seeds_in_five_crowd_three_changes_under_one_slow_runs_window() {
        let mut drawn = 0;
        for seed in 0..200 {
            let mut tasks = generate(seed, &Knobs::default()).tasks;
            let Some(fault) = draw(&mut Stream::BusyNews.rng(seed), &mut tasks) else {
                continue;
            };
            drawn += 1;
            let FaultKind::SlowRuns { run_ms } = fault.kind else {
                panic!("seed {seed}: {fault:?}");
            };
            assert!((15_000..25_000).contains(&run_ms), "seed {seed}");
            // The window opens at a change followed by two more within 3-5 s each.
            let crowded = tasks.iter().any(|t| {
                t.hint_secs == Some(1.0)
                    && t.steps.windows(3).any(|w| {
                        let opens = t.submit_at_ms + w[0].after_ms == fault.at_ms;
                        let gaps = [w[1].after_ms - w[0].after_ms, w[2].after_ms - w[1].after_ms];
                        opens && gaps.iter().all(|g| (3_000..5_000).contains(g))
                    })
            });
            assert!(
                crowded,
                "seed {seed}: no three close changes at {}",
                fault.at_ms
            );
        }
        assert!((80..=150).contains(&drawn), "{drawn} of 200 seeds");
    }
}
