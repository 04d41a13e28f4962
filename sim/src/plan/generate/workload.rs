//! The workload: tasks, their remote scripts and contents, the remote quirks planted on some,
//! and last the hostile names and disguised texts laid over the final scripts.

use super::streams::Stream;
use super::swarm::{Hostile, Swarm};
use super::LAST_MS;
use crate::plan::*;
use rand::seq::IndexedRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// `swarm.task_count` tasks of up to `swarm.owners` owners (a third in one burst on some
/// seeds), each with a script, and the remote quirks planted on some of them. Drawn from the
/// swarm stream `rng`, right after the swarm itself. Every task starts with the immediate
/// cancel style and a plain name; later passes change them.
pub(super) fn tasks(rng: &mut ChaCha8Rng, swarm: &Swarm) -> Vec<TaskPlan> {
    let mut tasks = Vec::new();
    let burst_at = rng
        .random_bool(0.5)
        .then(|| rng.random_range(0..LAST_MS / 3));
    for n in 0..swarm.task_count {
        let owner = rng.random_range(0..swarm.owners);
        let thread = rng.random_range(0..2u32);
        let submit_at_ms = match burst_at {
            Some(at) if n % 3 == 0 => at,
            _ => rng.random_range(0..LAST_MS / 2),
        };
        let budget = LAST_MS - submit_at_ms;
        tasks.push(TaskPlan {
            n,
            owner,
            thread,
            submit_at_ms,
            hint_secs: rng
                .random_bool(0.3)
                .then(|| f64::from(rng.random_range(1..10u32))),
            steps: script(rng, budget, &swarm.hostile),
            quirk: None,
            cancel_style: CancelStyle::Immediate,
            hostile_name: false,
        });
    }
    plant_quirks(rng, &mut tasks);
    tasks
}

/// Remote misbehaviours the swarm may plant, each on one task of a seed.
const QUIRKS: [QuirkKind; 7] = [
    QuirkKind::UnknownTask,
    QuirkKind::NanHint,
    QuirkKind::WrongTaskId,
    QuirkKind::UnknownStatus,
    QuirkKind::OversizedInputRequest,
    QuirkKind::OversizedArtifact,
    QuirkKind::DuplicateHandle,
];

/// Plants each remote quirk, with some chance, on a task that has none yet.
fn plant_quirks(rng: &mut ChaCha8Rng, tasks: &mut [TaskPlan]) {
    let task_count = tasks.len();
    for kind in QUIRKS {
        if rng.random_bool(0.3) {
            let t = &mut tasks[rng.random_range(0..task_count)];
            if t.quirk.is_none() {
                let budget = LAST_MS - t.submit_at_ms;
                t.quirk = Some(Quirk {
                    after_ms: rng.random_range(0..budget.max(1) / 2),
                    kind,
                });
            }
        }
    }
}

/// Text for a scripted status: plain on half the draws (on all if no hostile content is on),
/// otherwise one of the `hostile` kinds. Only results may be oversized: an oversized input
/// request is a protocol error, which makes the task terminal for the engine but not for the
/// server — such breaches are planned as absorbing quirks instead.
fn content(
    rng: &mut ChaCha8Rng,
    hostile: &[Hostile],
    plain: &str,
    may_be_oversized: bool,
) -> Content {
    if hostile.is_empty() || rng.random_bool(0.5) {
        return Content::Plain(plain.to_owned());
    }
    let kind = hostile.choose(rng).copied().unwrap_or(Hostile::Plain);
    kind.content(rng, plain, may_be_oversized)
}

/// A task's remote script within `budget_ms` of its submit: up to three flaps between asking
/// and working, then (most of the time) an end — completed, failed or asking for approval —
/// unless the last flap already has that status. Steps are strictly increasing in time.
fn script(rng: &mut ChaCha8Rng, budget_ms: u64, hostile: &[Hostile]) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut at = 0;
    let flaps = rng.random_range(0..=3u32);
    for i in 0..flaps {
        at += rng.random_range(2_000..20_000);
        if at >= budget_ms {
            return steps;
        }
        let status = if i % 2 == 0 {
            ScriptStatus::InputRequired
        } else {
            ScriptStatus::Working
        };
        let text = (status == ScriptStatus::InputRequired)
            .then(|| content(rng, hostile, "which branch?", false));
        steps.push(Step {
            after_ms: at,
            status,
            text,
            questions: 1,
        });
    }
    at += rng.random_range(2_000..40_000);
    if at < budget_ms {
        let end = match rng.random_range(0..100) {
            0..60 => Some((ScriptStatus::Completed, "all green")),
            60..75 => Some((ScriptStatus::Failed, "build broke")),
            75..85 => Some((ScriptStatus::InputRequired, "need approval")),
            _ => None,
        };
        if let Some((status, plain)) = end {
            if steps.last().is_none_or(|s| s.status != status) {
                let text = content(rng, hostile, plain, status == ScriptStatus::Completed);
                steps.push(Step {
                    after_ms: at,
                    status,
                    text: Some(text),
                    questions: 1,
                });
            }
        }
    }
    steps
}

/// Hostile task names, disguised injections and secret echoes in the servers' texts, each from
/// a stream of its own. Runs after every pass that rewrites scripts, so the disguises fall on the texts
/// the plan keeps.
pub(super) fn hostile_texts(seed: u64, tasks: &mut [TaskPlan]) {
    hostile_names(&mut Stream::HostileNames.rng(seed), tasks);
    crate::plan::disguise::disguise_texts(&mut Stream::Disguise.rng(seed), tasks);
    crate::plan::echo::draw_echoes(&mut Stream::Echoes.rng(seed), tasks);
}

/// On two seeds in five, users give about a third of the tasks a hostile name (forged tags
/// and boundary markers after `job-{n}`): the name reaches models in every notification
/// prompt, run context and listing of the task, neutralised.
fn hostile_names(rng: &mut ChaCha8Rng, tasks: &mut [TaskPlan]) {
    if !rng.random_bool(0.4) {
        return;
    }
    for t in tasks.iter_mut() {
        t.hostile_name = rng.random_bool(0.3);
    }
}
