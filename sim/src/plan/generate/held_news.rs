//! News under a held launch: on four seeds in five with two workers or more, one task's question
//! is answered 1.3-1.8 s after it is asked and its script brings news again (another question,
//! or its end) 0.3-0.8 s after that (polled every second; the answer lifts the 60 s floor and
//! is followed at once by a poll), while every worker's link to the gateway is held for
//! 2.5-2.9 s from the question. The question's launch waits on that link with its notification
//! lease live when a poll, often another worker's, opens the next version — the
//! interleaving [`crate::plan::WorkloadMark::PollNewsUnderNotifyLease`] names, which the
//! rest of the draws reach on fewer than one seed in ten.

use crate::plan::fault::{Fault, FaultKind, Service, Target};
use crate::plan::{ScriptStatus, Step, TaskPlan, UserAction};
use rand::seq::IndexedRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// How long every gateway link is held: within the launcher's call deadline (3 s), so the
/// launch the question caused is slow, not failed, and its lease stays held through it.
const HOLD_MS: (u64, u64) = (2_500, 2_900);

/// Share of the seeds (with two workers or more) that draw the episode.
const SHARE: f64 = 0.8;

/// How long before the question and after it the faults that may hold polls back or strike
/// launches are counted: the question picked is one with the fewest (the chaos leaves
/// hardly any stretch free of them), so the polls mostly run on time and the launch mostly
/// meets nothing but the hold.
const CALM_MS: (u64, u64) = (4_000, 4_000);

/// Adds the episode's holds (one per worker) to `faults`, kept in start order, and returns its
/// answer; nothing on the other seeds, with fewer than two workers, or when no task of its own
/// (no quirk, no fault about it or its thread) asks a question followed by news before
/// `last_ms`.
pub(super) fn draw(
    rng: &mut ChaCha8Rng,
    tasks: &mut [TaskPlan],
    faults: &mut Vec<Fault>,
    workers: u32,
    last_ms: u64,
) -> Option<UserAction> {
    if workers < 2 || !rng.random_bool(SHARE) {
        return None;
    }
    let asking: Vec<(usize, usize, usize)> = tasks
        .iter()
        .enumerate()
        .filter(|(_, t)| t.quirk.is_none() && !shares_faulted_thread(tasks, faults, t))
        .flat_map(|(i, t)| asking_then_news(&t.steps).map(move |(s, k)| (i, s, k)))
        .collect();
    let stir = |&(i, s, _): &(usize, usize, usize)| {
        stir(faults, tasks[i].submit_at_ms + tasks[i].steps[s].after_ms)
    };
    let least = asking.iter().map(stir).min()?;
    let calmest: Vec<_> = asking.iter().filter(|c| stir(c) == least).collect();
    let &&(i, s, k) = calmest.choose(rng)?;
    let t = &mut tasks[i];
    let asked_ms = t.steps[s].after_ms;
    let asked_at = t.submit_at_ms + asked_ms;
    let answer_ms = asked_ms + rng.random_range(1_300..1_800);
    let answer_at = t.submit_at_ms + answer_ms;
    let news_ms = answer_ms + rng.random_range(300..800);
    let hold_ms = rng.random_range(HOLD_MS.0..HOLD_MS.1);
    if answer_at >= last_ms {
        return None;
    }
    // The steps up to the news spread evenly between the answer and the news. Steps are only
    // ever brought forward (the minimum of two increasing sequences increases): the order and
    // the script's end stay as drawn.
    let count = (k - s) as u64;
    for (j, step) in t.steps[s + 1..=k].iter_mut().enumerate() {
        let at = answer_ms + (news_ms - answer_ms) * (j as u64 + 1) / count;
        step.after_ms = step.after_ms.min(at);
    }
    t.hint_secs = Some(1.0);
    let answer = UserAction::Answer {
        task: t.n,
        at_ms: answer_at,
        by_owner: None,
        question: 0,
    };
    faults.extend((0..workers).map(|worker| Fault {
        at_ms: asked_at,
        for_ms: hold_ms,
        kind: FaultKind::Hold {
            worker,
            service: Service::Gateway,
        },
    }));
    // Stable: faults starting together keep their order, the holds after the others.
    faults.sort_by_key(|f| f.at_ms);
    Some(answer)
}

/// Whether `t` or a task on its thread is one a fault of `faults` is about (its shard's outage,
/// its doomed version): that scenario's script and the runs on its thread stay as it drew them.
fn shares_faulted_thread(tasks: &[TaskPlan], faults: &[Fault], t: &TaskPlan) -> bool {
    let about = |n: u32| {
        faults.iter().any(|f| {
            matches!(f.kind, FaultKind::RemoteDown { task } | FaultKind::DoomedVersion { task, .. } if task == n)
        })
    };
    tasks
        .iter()
        .filter(|o| (o.owner, o.thread) == (t.owner, t.thread))
        .any(|o| about(o.n))
}

/// How many faults of `faults` that may hold polls back or strike the gateway are active, or
/// linger, from [`CALM_MS`] before `at_ms` to [`CALM_MS`] after it.
fn stir(faults: &[Fault], at_ms: u64) -> usize {
    let (from, to) = (at_ms.saturating_sub(CALM_MS.0), at_ms + CALM_MS.1);
    faults
        .iter()
        .filter(|f| {
            let end = f.at_ms + f.for_ms + f.kind.lingers_ms();
            let strikes =
                f.kind.excuse().polls || f.kind.target() == Target::Service(Service::Gateway);
            strikes && f.at_ms < to && end > from
        })
        .count()
}

/// Each asking step `s` of `steps` with the first later step `k` that is news again (another
/// question, or the end).
fn asking_then_news(steps: &[Step]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let news = |st: &Step| st.status == ScriptStatus::InputRequired || st.status.is_terminal();
    (0..steps.len())
        .filter(|&s| steps[s].status == ScriptStatus::InputRequired)
        .filter_map(move |s| {
            let k = steps[s + 1..].iter().position(news)?;
            Some((s, s + 1 + k))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::generate::{generate, Knobs};

    #[test]
    fn most_seeds_with_workers_to_spare_hold_every_launch_over_news() {
        let (mut drawn, mut eligible) = (0, 0);
        for seed in 0..200 {
            let plan = generate(seed, &Knobs::default());
            if plan.workers < 2 {
                continue;
            }
            eligible += 1;
            let held: Vec<&Fault> = plan
                .faults
                .iter()
                .filter(|f| {
                    f.kind
                        == FaultKind::Hold {
                            worker: 0,
                            service: Service::Gateway,
                        }
                })
                .filter(|f| (HOLD_MS.0..HOLD_MS.1).contains(&f.for_ms))
                .collect();
            let Some(hold) = held.first() else { continue };
            drawn += 1;
            let asks = plan.tasks.iter().any(|t| {
                t.steps.iter().any(|st| {
                    st.status == ScriptStatus::InputRequired
                        && t.submit_at_ms + st.after_ms == hold.at_ms
                })
            });
            assert!(asks, "seed {seed}: no question as the hold begins");
        }
        assert!(
            drawn * 10 >= eligible * 6 && drawn * 10 <= eligible * 9,
            "{drawn} of {eligible}"
        );
    }
}
