//! Targeted scenarios, each on a stream of its own: polls held while their tasks' cancels end,
//! one task's shard going down, a doomed notification version, tasks the server cancels on its
//! own — each reshaping a task's script or cancel style around the faults and cancels it
//! draws — and whether retention runs.

use super::fresh_dead_letter;
use super::streams::Stream;
use super::{CHAOS_MS, LAST_MS};
use crate::plan::fault::{Fault, FaultKind, Service};
use crate::plan::*;
use rand::seq::IndexedRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// What the scenarios drew, kept apart so that [`super::generate`] can order the faults among
/// the plan's others.
pub(super) struct Scenarios {
    /// The users' and the operator's actions, in this order: the held polls' cancels, the doomed
    /// task's, the owners' after a self-cancel, a fresh dead letter's thread deletion and
    /// requeue.
    pub user: Vec<UserAction>,
    /// The holds of a worker's polls before their tasks' cancels end.
    pub held_polls: Vec<Fault>,
    /// The faults about one task: its shard's outages, then the doomed version.
    pub task_faults: Vec<Fault>,
    /// Whether retention runs (always with a fresh dead letter).
    pub retention: bool,
}

impl Scenarios {
    /// The scenarios of `seed` for `workers` workers, in this order: held polls, shard outages
    /// (with a long second one), doomed version, self-cancels, a fresh dead letter. Each may
    /// rewrite the script, hint or cancel style of a task the ones before left as it needs it;
    /// `tasks` must hold the users' cancel styles already.
    pub fn draw(seed: u64, tasks: &mut [TaskPlan], workers: u32) -> Scenarios {
        let held = held_polls_then_cancels(&mut Stream::HeldPoll.rng(seed), tasks, workers);
        let (held_cancels, held_polls): (Vec<UserAction>, Vec<Fault>) = held.into_iter().unzip();
        let mut task_faults = task_outages(&mut Stream::TaskOutages.rng(seed), tasks);
        long_second_outage(&mut Stream::LongSecondOutage.rng(seed), &mut task_faults);
        let doomed = doomed_version(&mut Stream::DoomedVersion.rng(seed), tasks);
        let (doomed, doomed_cancel) = doomed.unzip();
        task_faults.extend(doomed);
        let owners_cancels = self_cancels(&mut Stream::SelfCancels.rng(seed), tasks, &task_faults);
        let fresh = fresh_dead_letter::draw(&mut Stream::FreshDeadLetter.rng(seed), tasks);
        let retention = Stream::Retention.rng(seed).random_bool(2.0 / 3.0);
        Scenarios {
            retention: retention || fresh.is_some(),
            user: held_cancels
                .into_iter()
                .chain(doomed_cancel)
                .chain(owners_cancels)
                .chain(fresh.into_iter().flatten())
                .collect(),
            held_polls,
            task_faults,
        }
    }
}

/// On one seed in two with several workers, one to three times (on distinct tasks), one
/// worker's calls to the remote server are held on the wire for 6-10 s while a task it polls
/// every second is cancelled and its server acknowledges the cancel: the held poll is still in
/// flight when the cancel's end voids its lease — the moment a second poll must not start
/// (never two remote polls of one task at once). Which worker claims the poll first is the
/// run's, so each further episode is one more chance that the held worker holds that lease.
fn held_polls_then_cancels(
    rng: &mut ChaCha8Rng,
    tasks: &mut [TaskPlan],
    workers: u32,
) -> Vec<(UserAction, Fault)> {
    if workers < 2 || tasks.is_empty() || !rng.random_bool(0.5) {
        return Vec::new();
    }
    let first = rng.random_range(0..tasks.len());
    let mut episodes: Vec<(UserAction, Fault)> =
        held_poll_then_cancel(rng, &mut tasks[first], workers)
            .into_iter()
            .collect();
    let mut used = vec![first];
    for _ in 0..rng.random_range(0..=2) {
        let i = rng.random_range(0..tasks.len());
        if used.contains(&i) {
            continue;
        }
        used.push(i);
        episodes.extend(held_poll_then_cancel(rng, &mut tasks[i], workers));
    }
    episodes
}

/// One episode of [`held_polls_then_cancels`] about task `t`, or `None` when it would end
/// after the users' last actions.
fn held_poll_then_cancel(
    rng: &mut ChaCha8Rng,
    t: &mut TaskPlan,
    workers: u32,
) -> Option<(UserAction, Fault)> {
    let hold_at = t.submit_at_ms + rng.random_range(4_000..20_000);
    let cancel_at = hold_at + rng.random_range(1_500..3_000);
    if cancel_at >= LAST_MS {
        return None;
    }
    t.hint_secs = Some(1.0);
    t.cancel_style = CancelStyle::Acknowledged {
        after_ms: rng.random_range(5_000..10_000),
    };
    let hold = Fault {
        at_ms: hold_at,
        for_ms: rng.random_range(6_000..10_000),
        kind: FaultKind::Hold {
            worker: rng.random_range(0..workers),
            service: Service::Mcp,
        },
    };
    let cancel = UserAction::cancel_once(t.n, cancel_at);
    Some((cancel, hold))
}

/// The latest submit of a task whose shard goes down twice: both outages and the recovery
/// between them fit before its script ends.
const TWICE_DOWN_LATEST_SUBMIT_MS: u64 = 30_000;

/// On three seeds in four, one task runs long (it completes late in the chaos) and its remote
/// shard goes down. On three in five of them twice, each time long enough for tracking to degrade (three
/// failed polls), with a recovery between that outlasts the capped poll backoff, so a poll
/// sees it (degraded, recovered, degraded again); on the others once for two to two and a half
/// minutes up to the heal, so the poll backoff reaches its cap and the first poll
/// after the heal shows whether it stayed there. Returns the outages in time order.
fn task_outages(rng: &mut ChaCha8Rng, tasks: &mut [TaskPlan]) -> Vec<Fault> {
    if !rng.random_bool(0.75) || tasks.is_empty() {
        return Vec::new();
    }
    let twice = rng.random_bool(0.6);
    let early: Vec<usize> = (0..tasks.len())
        .filter(|&i| tasks[i].submit_at_ms <= TWICE_DOWN_LATEST_SUBMIT_MS)
        .collect();
    let t = match early.choose(rng) {
        Some(&i) if twice => &mut tasks[i],
        _ => {
            let i = rng.random_range(0..tasks.len());
            &mut tasks[i]
        }
    };
    let twice = twice && t.submit_at_ms <= TWICE_DOWN_LATEST_SUBMIT_MS;
    let ends_ms = if twice {
        LAST_MS - 1
    } else {
        (t.submit_at_ms + rng.random_range(100_000..140_000)).min(LAST_MS - 1)
    };
    t.steps = vec![Step {
        after_ms: ends_ms - t.submit_at_ms,
        status: ScriptStatus::Completed,
        text: Some(Content::Plain("all green".into())),
        questions: 1,
    }];
    t.quirk = None;
    let down = |at_ms: u64, for_ms: u64| Fault {
        at_ms,
        for_ms,
        kind: FaultKind::RemoteDown { task: t.n },
    };
    if twice {
        let first_at = t.submit_at_ms + rng.random_range(3_000..10_000);
        let first_for = rng.random_range(30_000..40_000);
        let second_at = first_at + first_for + rng.random_range(45_000..55_000);
        let second_for = rng.random_range(35_000..45_000);
        vec![down(first_at, first_for), down(second_at, second_for)]
    } else {
        let for_ms = rng.random_range(120_000..150_000);
        vec![down(CHAOS_MS - for_ms, for_ms)]
    }
}

/// On most seeds (85 %) whose task's shard goes down twice (two remote outages among `faults`,
/// the later one second), the second outage lasts up to the heal (three quarters of a minute
/// to over a minute and a half): long after tracking degrades again, so the second degradation
/// must be notified whatever the faults meanwhile delay (the checker's `degraded` rule). Start
/// times stay as drawn; the task's completion is seen after the heal.
fn long_second_outage(rng: &mut ChaCha8Rng, faults: &mut [Fault]) {
    let mut downs = faults
        .iter_mut()
        .filter(|f| matches!(f.kind, FaultKind::RemoteDown { .. }));
    let (Some(_), Some(second), None) = (downs.next(), downs.next(), downs.next()) else {
        return;
    };
    if rng.random_bool(0.85) {
        second.for_ms = CHAOS_MS.saturating_sub(second.at_ms).max(second.for_ms);
    }
}

/// How long after the question the owner of a doomed task cancels it: about when the doomed
/// snapshot spends its last attempts.
const DOOMED_CANCEL_MS: std::ops::Range<u64> = 40_000..75_000;

/// On three seeds in five, the first notification of a task that asks a question is doomed:
/// its runs fail within seconds until the failure budget is spent (a minute or two), and late
/// in that dispatch the owner cancels the task (on a server that cancels at once), so a newer
/// state (cancelled) lands while the doomed snapshot spends its last attempts — and must still
/// be delivered after the dead letter. Only a task without a quirk is doomed.
fn doomed_version(rng: &mut ChaCha8Rng, tasks: &mut [TaskPlan]) -> Option<(Fault, UserAction)> {
    if !rng.random_bool(0.6) {
        return None;
    }
    let asked_at = |t: &TaskPlan| {
        t.steps
            .iter()
            .find(|s| s.status == ScriptStatus::InputRequired)
            .map(|s| t.submit_at_ms + s.after_ms)
    };
    let asking: Vec<usize> = (0..tasks.len())
        .filter(|&i| tasks[i].quirk.is_none())
        .filter(|&i| asked_at(&tasks[i]).is_some_and(|at| at + DOOMED_CANCEL_MS.end < LAST_MS))
        .collect();
    let t = &mut tasks[*asking.choose(rng)?];
    let cancel_at = asked_at(t)? + rng.random_range(DOOMED_CANCEL_MS);
    t.cancel_style = CancelStyle::Immediate;
    let fault = Fault {
        at_ms: t.submit_at_ms,
        for_ms: CHAOS_MS - t.submit_at_ms,
        kind: FaultKind::DoomedVersion {
            task: t.n,
            run_ms: rng.random_range(1_000..4_000),
        },
    };
    let cancel = UserAction::cancel_once(t.n, cancel_at);
    Some((fault, cancel))
}

/// On three seeds in ten, the server cancels one or two tasks on its own, nobody having asked:
/// the script ends `cancelled` 2 to 30 seconds after its last non-terminal step, in place of
/// the end it had. Tasks one of `faults` is about (an outage, a doomed version) keep their
/// scripts. For some of them the owner cancels too, just after the server did, before the
/// engine saw it.
fn self_cancels(rng: &mut ChaCha8Rng, tasks: &mut [TaskPlan], faults: &[Fault]) -> Vec<UserAction> {
    let mut out = Vec::new();
    if !rng.random_bool(0.3) {
        return out;
    }
    let faulted = |n: u32| {
        faults.iter().any(|f| {
            matches!(f.kind, FaultKind::RemoteDown { task } | FaultKind::DoomedVersion { task, .. } if task == n)
        })
    };
    let candidates: Vec<usize> = (0..tasks.len()).filter(|&i| !faulted(tasks[i].n)).collect();
    for _ in 0..rng.random_range(1..=2) {
        let Some(&i) = candidates.choose(rng) else {
            break;
        };
        let t = &mut tasks[i];
        if t.steps
            .last()
            .is_some_and(|s| s.status == ScriptStatus::Cancelled)
        {
            continue;
        }
        let last_running = t
            .steps
            .iter()
            .rfind(|s| !s.status.is_terminal())
            .map_or(0, |s| s.after_ms);
        let after_ms = last_running + rng.random_range(2_000..30_000);
        let cancelled_at = t.submit_at_ms + after_ms;
        if cancelled_at >= LAST_MS - 1 {
            continue;
        }
        t.steps.retain(|s| !s.status.is_terminal());
        t.steps.push(Step {
            after_ms,
            status: ScriptStatus::Cancelled,
            text: None,
            questions: 1,
        });
        if rng.random_bool(0.4) {
            out.push(UserAction::Cancel {
                task: t.n,
                at_ms: (cancelled_at + rng.random_range(100..3_000)).min(LAST_MS - 1),
                repeats: rng.random_range(0..=1),
                concurrent: false,
                by_name: false,
            });
        }
    }
    out
}
