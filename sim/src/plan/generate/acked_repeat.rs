//! A repeat after an acknowledged cancel while the task keeps working: on nine seeds in ten,
//! one task in a working stretch of at least [`WORKING_STRETCH_MS`] is cancelled, its server
//! acknowledges and cancels it only 25-40 s later, it is polled every second meanwhile, and its
//! owner asks again 3.5-9 s after the first request, still inside the stretch — by then the
//! cancel work has ended, and polling must go on as before (`repeat-cancel-pauses-polls`). The users' other late repeats
//! mostly meet a task already cancelled or waiting for input, whose 60 s poll floor hides a
//! pause.

use crate::plan::fault::Fault;
use crate::plan::{CancelStyle, ScriptStatus, TaskPlan, UserAction};
use rand::seq::IndexedRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// How long the task must stay `working` after the first request: the repeat and a poll
/// after it fall inside.
const WORKING_STRETCH_MS: u64 = 6_000;

/// How long after the first request no fault that may hold polls back may be active: a pause
/// of polling must not hide behind one.
const QUIET_MS: u64 = 55_000;

/// The first request and its repeat, or nothing on the other seeds or when no task without a
/// cancel of its own has a long enough working stretch before `last_ms` that starts
/// [`QUIET_MS`] free of the `faults` that may hold polls back.
pub(super) fn draw(
    rng: &mut ChaCha8Rng,
    tasks: &mut [TaskPlan],
    user: &[UserAction],
    faults: &[Fault],
    last_ms: u64,
) -> Vec<UserAction> {
    if !rng.random_bool(0.9) {
        return Vec::new();
    }
    let cancelled = |n: u32| {
        user.iter()
            .any(|a| matches!(*a, UserAction::Cancel { task, .. } if task == n))
    };
    let stretches: Vec<(usize, (u64, u64))> = tasks
        .iter()
        .enumerate()
        .filter(|(_, t)| t.quirk.is_none() && !cancelled(t.n))
        .flat_map(|(i, t)| working_starts(t, last_ms).map(move |at| (i, at)))
        .filter(|&(_, (start, _))| quiet(faults, start, start + QUIET_MS))
        .collect();
    let Some(&(i, (start_ms, until_ms))) = stretches.choose(rng) else {
        return Vec::new();
    };
    let t = &mut tasks[i];
    t.hint_secs = Some(1.0);
    t.cancel_style = CancelStyle::Acknowledged {
        after_ms: rng.random_range(25_000..40_000),
    };
    let first_ms = start_ms + rng.random_range(500..1_000);
    let latest_ms = until_ms.min(first_ms + 10_000) - 1_000;
    let repeat = UserAction::Cancel {
        task: t.n,
        at_ms: rng.random_range(first_ms + 3_500..latest_ms),
        repeats: 0,
        concurrent: false,
        by_name: rng.random_bool(0.5),
    };
    vec![UserAction::cancel_once(t.n, first_ms), repeat]
}

/// When each of `t`'s working steps begins and ends (ms since the run's start; an end past
/// `last_ms` is cut there), for the steps that stay working for [`WORKING_STRETCH_MS`].
fn working_starts(t: &TaskPlan, last_ms: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
    t.steps.iter().enumerate().filter_map(move |(s, step)| {
        let start = t.submit_at_ms + step.after_ms;
        let until = t
            .steps
            .get(s + 1)
            .map_or(last_ms, |next| t.submit_at_ms + next.after_ms);
        let until = until.min(last_ms);
        let long = until.saturating_sub(start) >= WORKING_STRETCH_MS;
        (step.status == ScriptStatus::Working && long).then_some((start, until))
    })
}

/// Whether no fault of `faults` that may hold polls back is active, or lingers, within
/// `from..to`.
fn quiet(faults: &[Fault], from: u64, to: u64) -> bool {
    !faults.iter().any(|f| {
        let end = f.at_ms + f.for_ms + f.kind.lingers_ms();
        f.kind.excuse().polls && f.at_ms < to && end > from
    })
}

#[cfg(test)]
mod tests {
    use super::{quiet, QUIET_MS};
    use crate::plan::generate::{generate, Knobs};
    use crate::plan::{CancelStyle, Plan, UserAction};

    /// The task of `plan` this pass drew (acknowledged 25 s or more after a cancel), if any.
    fn drawn(plan: &Plan) -> Option<u32> {
        plan.tasks.iter().find_map(|t| match t.cancel_style {
            CancelStyle::Acknowledged { after_ms } if after_ms >= 25_000 => Some(t.n),
            _ => None,
        })
    }

    #[test]
    fn most_seeds_cancel_a_working_task_in_a_quiet_window_and_repeat_after_the_work() {
        let mut seen = 0;
        for seed in 0..200 {
            let plan = generate(seed, &Knobs::default());
            let Some(n) = drawn(&plan) else { continue };
            seen += 1;
            let mut cancels: Vec<u64> = plan
                .user
                .iter()
                .filter_map(|a| match *a {
                    UserAction::Cancel { task, at_ms, .. } if task == n => Some(at_ms),
                    _ => None,
                })
                .collect();
            cancels.sort_unstable();
            assert_eq!(cancels.len(), 2, "seed {seed}: {cancels:?}");
            let gap = cancels[1] - cancels[0];
            assert!((3_500..10_000).contains(&gap), "seed {seed}: {gap} ms");
            // The stretch began 0.5-1 s before the first request; its quiet window covers this.
            let from = cancels[0] - 500;
            assert!(
                quiet(&plan.faults, from, from + QUIET_MS - 500),
                "seed {seed}"
            );
        }
        assert!(seen >= 10, "only {seen} of 200 seeds drew the repeat");
    }
}
