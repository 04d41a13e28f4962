//! What users and the operator do: cancels, thread deletions and listings on the swarm stream;
//! then requeues, answers, several questions at once and the cancels that meet the servers'
//! cancel styles, each on a stream of its own.

use super::streams::Stream;
use super::LAST_MS;
use crate::plan::*;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Cancels (own and foreign), a thread deletion and listings, timed after the tasks' submits.
/// Drawn from the swarm stream `rng`, right after the tasks. `tasks` must not be empty.
pub(super) fn actions(rng: &mut ChaCha8Rng, tasks: &[TaskPlan], owners: u32) -> Vec<UserAction> {
    let mut user = Vec::new();
    if rng.random_bool(0.75) {
        for _ in 0..rng.random_range(1..=4) {
            let t = &tasks[rng.random_range(0..tasks.len())];
            user.push(UserAction::Cancel {
                task: t.n,
                at_ms: (t.submit_at_ms + rng.random_range(1_000..30_000)).min(LAST_MS),
                repeats: rng.random_range(0..=3),
                concurrent: rng.random_bool(0.3),
                by_name: rng.random_bool(0.3),
            });
        }
    }
    if rng.random_bool(0.4) {
        for _ in 0..rng.random_range(1..=2) {
            let t = &tasks[rng.random_range(0..tasks.len())];
            user.push(UserAction::ForeignCancel {
                task: t.n,
                by_owner: (t.owner + 1) % owners.max(2),
                at_ms: (t.submit_at_ms + rng.random_range(1_000..30_000)).min(LAST_MS),
            });
        }
    }
    if rng.random_bool(0.3) {
        let t = &tasks[rng.random_range(0..tasks.len())];
        user.push(UserAction::DeleteThread {
            owner: t.owner,
            thread: t.thread,
            at_ms: rng.random_range(t.submit_at_ms..LAST_MS),
        });
    }
    for t in tasks {
        if rng.random_bool(0.3) {
            user.push(UserAction::List {
                owner: t.owner,
                thread: t.thread,
                at_ms: rng.random_range(t.submit_at_ms..LAST_MS),
            });
        }
    }
    user
}

/// The actions that answer the workload and the users' first `actions`, in this order, each
/// from a stream of its own: the operator's requeues, the owners' answers, the answers to the
/// steps that now ask several questions at once, and the cancels that meet the cancel styles
/// now drawn for every task. Reads the scripts as the workload drew them; sets the steps'
/// question counts and the tasks' cancel styles.
pub(super) fn reactions(
    seed: u64,
    tasks: &mut [TaskPlan],
    actions: &[UserAction],
    owners: u32,
) -> Vec<UserAction> {
    let mut out = requeues(&mut Stream::Requeues.rng(seed), tasks, actions);
    out.extend(answers(&mut Stream::Answers.rng(seed), tasks, owners));
    out.extend(several_questions(&mut Stream::Questions.rng(seed), tasks));
    out.extend(cancel_styles(&mut Stream::CancelStyles.rng(seed), tasks));
    out.extend(late_repeats(&mut Stream::LateRepeats.rng(seed), actions));
    out
}

/// On seven seeds in ten, each of the users' first cancels is asked again 8 to 40 s later, by
/// id or by name: by then the cancel work has often ended (acknowledged, answered with a
/// terminal snapshot, or dead-lettered), and a repeat must change nothing — no cancel call, no
/// pause in polling.
fn late_repeats(rng: &mut ChaCha8Rng, actions: &[UserAction]) -> Vec<UserAction> {
    if !rng.random_bool(0.7) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for a in actions {
        if let UserAction::Cancel { task, at_ms, .. } = *a {
            let later = at_ms + rng.random_range(8_000..40_000);
            if later < LAST_MS {
                out.push(UserAction::Cancel {
                    task,
                    at_ms: later,
                    repeats: rng.random_range(0..=1),
                    concurrent: false,
                    by_name: rng.random_bool(0.5),
                });
            }
        }
    }
    out
}

/// On four seeds in five, an operator requeues dead letters: of tasks on a deleted thread
/// (a thread deletion among `user`) some time after the deletion (a thread-gone dead letter,
/// which dead-letters again), and of a few tasks late in the run (budget dead letters under
/// faults).
fn requeues(rng: &mut ChaCha8Rng, tasks: &[TaskPlan], user: &[UserAction]) -> Vec<UserAction> {
    let mut out = Vec::new();
    if !rng.random_bool(0.8) {
        return out;
    }
    for a in user {
        if let UserAction::DeleteThread {
            owner,
            thread,
            at_ms,
        } = a
        {
            for t in tasks
                .iter()
                .filter(|t| t.owner == *owner && t.thread == *thread)
            {
                out.push(UserAction::Requeue {
                    task: t.n,
                    at_ms: (at_ms + rng.random_range(5_000..60_000)).min(LAST_MS),
                });
            }
        }
    }
    for _ in 0..rng.random_range(2..=4) {
        let t = &tasks[rng.random_range(0..tasks.len())];
        out.push(UserAction::Requeue {
            task: t.n,
            at_ms: rng.random_range(t.submit_at_ms.clamp(LAST_MS / 2, LAST_MS - 1)..LAST_MS),
        });
    }
    out
}

/// Answers to the questions scripts ask: for most asking steps the owner answers, some time
/// after the step begins — before the engine has seen the question, while it asks, or after
/// the script moved on; for some, another owner tries the victim's exact thread, task id and
/// request id first; for some, the owner answers in the last seconds before the script moves
/// on, so the engine forwards it under a request id the server no longer asks (a real server
/// ignores such an answer without an error).
fn answers(rng: &mut ChaCha8Rng, tasks: &[TaskPlan], owners: u32) -> Vec<UserAction> {
    let mut out = Vec::new();
    for t in tasks {
        for step in t
            .steps
            .iter()
            .filter(|s| s.status == ScriptStatus::InputRequired)
        {
            let asked_at = t.submit_at_ms + step.after_ms;
            if rng.random_bool(0.25) {
                out.push(UserAction::Answer {
                    task: t.n,
                    at_ms: (asked_at + rng.random_range(0..8_000)).min(LAST_MS - 1),
                    by_owner: Some((t.owner + 1) % owners.max(2)),
                    question: 0,
                });
            }
            if rng.random_bool(0.7) {
                out.push(UserAction::Answer {
                    task: t.n,
                    at_ms: (asked_at + rng.random_range(0..8_000)).min(LAST_MS - 1),
                    by_owner: None,
                    question: 0,
                });
            }
            let moves_on = t.steps.iter().find(|s| s.after_ms > step.after_ms);
            if let Some(next) = moves_on.filter(|_| rng.random_bool(0.35)) {
                let moved_at = t.submit_at_ms + next.after_ms;
                let at_ms = moved_at
                    .saturating_sub(rng.random_range(0..3_000))
                    .max(asked_at);
                out.push(UserAction::Answer {
                    task: t.n,
                    at_ms: at_ms.min(LAST_MS - 1),
                    by_owner: None,
                    question: 0,
                });
            }
        }
    }
    out
}

/// Questions an asking step draws when it asks several at once: enough that one stays open
/// after two were answered, so an earlier one can be answered again while the step still asks.
const SEVERAL: u32 = 3;

/// On two asking steps in five, the step asks [`SEVERAL`] questions at once (one input request
/// naming each), and its owner answers them one after another a few seconds apart, in a drawn
/// order that mostly answers the first one again after the second (DOMAIN §6: each question is
/// answered at most once, whatever was answered in between).
fn several_questions(rng: &mut ChaCha8Rng, tasks: &mut [TaskPlan]) -> Vec<UserAction> {
    let mut out = Vec::new();
    for t in tasks.iter_mut() {
        for step in t.steps.iter_mut() {
            if step.status != ScriptStatus::InputRequired || !rng.random_bool(0.4) {
                continue;
            }
            step.questions = SEVERAL;
            let mut at_ms = t.submit_at_ms + step.after_ms + rng.random_range(1_000..4_000);
            for question in answer_order(rng) {
                out.push(UserAction::Answer {
                    task: t.n,
                    at_ms: at_ms.min(LAST_MS - 1),
                    by_owner: None,
                    question,
                });
                at_ms += rng.random_range(2_000..8_000);
            }
        }
    }
    out
}

/// The order in which an owner answers the [`SEVERAL`] questions of one step: a first, a
/// second, then (seven times in ten) the first again, then the rest.
fn answer_order(rng: &mut ChaCha8Rng) -> Vec<u32> {
    let first = rng.random_range(0..SEVERAL);
    let second = (first + rng.random_range(1..SEVERAL)) % SEVERAL;
    let mut order = vec![first, second];
    if rng.random_bool(0.7) {
        order.push(first);
    }
    order.extend((0..SEVERAL).filter(|q| *q != first && *q != second));
    order
}

/// How each task's server answers a cancel: most at once, some acknowledge (the task is
/// cancelled seconds later), some are legacy servers that reject a cancel of a finished task.
/// On most seeds a user cancels a legacy-server task just after its script ended — before the
/// engine polled it — so the cancel meets "already terminal" until its budget is spent.
fn cancel_styles(rng: &mut ChaCha8Rng, tasks: &mut [TaskPlan]) -> Vec<UserAction> {
    let mut out = Vec::new();
    for t in tasks.iter_mut() {
        t.cancel_style = match rng.random_range(0..10u32) {
            0..=4 => CancelStyle::Immediate,
            5..=7 => CancelStyle::Acknowledged {
                after_ms: rng.random_range(1_000..10_000),
            },
            _ => CancelStyle::RejectsWhenTerminal,
        };
    }
    if !rng.random_bool(0.7) {
        return out;
    }
    for t in tasks.iter_mut() {
        let ended = t.steps.iter().find(|s| s.status.is_terminal());
        let Some(ended) = ended else { continue };
        let ended_at = t.submit_at_ms + ended.after_ms;
        if ended_at + 2_000 >= LAST_MS || !rng.random_bool(0.5) {
            continue;
        }
        t.cancel_style = CancelStyle::RejectsWhenTerminal;
        out.push(UserAction::Cancel {
            task: t.n,
            at_ms: ended_at + rng.random_range(100..2_000),
            repeats: rng.random_range(0..=2),
            concurrent: false,
            by_name: false,
        });
    }
    out
}
