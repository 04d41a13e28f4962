//! Plans from seeds, swarm-style: the seed picks which fault kinds are on and how hard, then
//! draws the workload and the timed faults. Same seed, same plan.
//!
//! [`generate`] draws the parts in order — `swarm`, `workload`, `users`, `faults`,
//! `scenarios` (with `fresh_dead_letter`), `busy_news`, then `quiet`, which drops faults around a
//! long outage, then `held_news` and `acked_repeat`, which look for calm stretches — each part taking what it reads of the parts before as parameters. Every
//! draw comes from one of the seed's [`Stream`]s: the swarm stream (the seed itself) draws the
//! swarm, the tasks, the users' first actions and the families' faults, in that order; every
//! pass added since draws from a stream of its own, so that adding one leaves every other draw
//! of every seed as it was.

mod acked_repeat;
mod busy_news;
mod faults;
mod fresh_dead_letter;
mod held_news;
mod lost_create_acks;
mod quiet;
mod scenarios;
mod streams;
mod swarm;
mod users;
mod workload;

pub use streams::Stream;

use crate::plan::fault::Fault;
use crate::plan::gateway_mode::GatewayMode;
use crate::plan::Plan;
use faults::Timed;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use scenarios::Scenarios;
use swarm::Swarm;

/// What the campaign's command line may fix instead of the seed.
#[derive(Clone, Debug, Default)]
pub struct Knobs {
    /// Worker hosts (1 to 16); drawn from the seed when absent.
    pub workers: Option<u32>,
    /// Tasks; drawn from the seed when absent.
    pub tasks: Option<u32>,
    /// Which launcher peer the gateway plays (not drawn: the same seed gives the same
    /// workload and faults in either mode).
    pub gateway: GatewayMode,
}

/// Length of the chaos phase of generated plans (without peer outages).
pub const CHAOS_MS: u64 = 180_000;
/// Scripts and user actions end this long before the chaos phase does.
const QUIET_TAIL_MS: u64 = 20_000;
/// The last instant scripts and user actions may use.
const LAST_MS: u64 = CHAOS_MS - QUIET_TAIL_MS;

/// The plan of `seed`: a valid plan (debug builds check it), its faults in start order.
pub fn generate(seed: u64, knobs: &Knobs) -> Plan {
    let mut rng = Stream::Swarm.rng(seed);
    let swarm = Swarm::draw(&mut rng, knobs);
    let mut tasks = workload::tasks(&mut rng, &swarm);
    let mut user = users::actions(&mut rng, &tasks, swarm.owners);
    let families = swarm::families(&mut rng, &swarm);
    // From here on every part draws from streams of its own.
    user.extend(users::reactions(seed, &mut tasks, &user, swarm.owners));
    let timed = Timed::draw(seed, swarm.workers, &tasks);
    let scenarios = Scenarios::draw(seed, &mut tasks, swarm.workers);
    let busy_news = busy_news::draw(&mut Stream::BusyNews.rng(seed), &mut tasks);
    workload::hostile_texts(seed, &mut tasks);
    user.extend(scenarios.user);
    let chaos_ms = timed.chaos_ms;
    let mut faults = by_start(
        families,
        timed,
        scenarios.held_polls,
        scenarios.task_faults,
        busy_news,
    );
    quiet::quiet_long_outage(&mut Stream::QuietOutage.rng(seed), &mut faults);
    let mut held = Stream::HeldNews.rng(seed);
    let workers = swarm.workers;
    user.extend(held_news::draw(
        &mut held,
        &mut tasks,
        &mut faults,
        workers,
        LAST_MS,
    ));
    let mut acked = Stream::AckedRepeat.rng(seed);
    user.extend(acked_repeat::draw(
        &mut acked, &mut tasks, &user, &faults, LAST_MS,
    ));
    let plan = Plan {
        seed,
        workers: swarm.workers,
        lanes: swarm.lanes,
        chaos_ms,
        tasks,
        user,
        faults,
        gateway: knobs.gateway,
        retention: scenarios.retention,
    };
    debug_assert_eq!(plan.check(), Ok(()), "seed {seed}");
    plan
}

/// Every fault, sorted by start once. The sort is stable, so faults that start at the same
/// instant keep the order they are chained in here — the order in which the passes were added
/// to the generator — which is thus part of every seed's plan: keep it.
fn by_start(
    families: Vec<Fault>,
    timed: Timed,
    held_polls: Vec<Fault>,
    task_faults: Vec<Fault>,
    busy_news: Option<Fault>,
) -> Vec<Fault> {
    let mut faults: Vec<Fault> = families
        .into_iter()
        .chain(timed.big_skew)
        .chain(held_polls)
        .chain(timed.answer_pauses)
        .chain(timed.restarts)
        .chain(task_faults)
        .chain(timed.store_outages)
        .chain(timed.stubborn_runs)
        .chain(timed.step_at_news)
        .chain(timed.peer_outages)
        .chain(timed.opposed_skews)
        .chain(timed.lost_create_acks)
        .chain(busy_news)
        .collect();
    faults.sort_by_key(|f| f.at_ms);
    faults
}

/// A duration in `lo..hi` milliseconds.
fn span(rng: &mut ChaCha8Rng, lo: u64, hi: u64) -> u64 {
    rng.random_range(lo..hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::fault::FaultKind;
    use crate::plan::{ScriptStatus, TaskPlan};

    #[test]
    fn same_seed_same_plan_and_plans_are_valid() {
        for seed in 0..200 {
            let a = generate(seed, &Knobs::default());
            assert_eq!(a, generate(seed, &Knobs::default()));
            a.check().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            assert_eq!(Plan::from_json(&a.to_json()), Ok(a));
        }
        assert_ne!(
            generate(1, &Knobs::default()),
            generate(2, &Knobs::default())
        );
    }

    #[test]
    fn some_seeds_have_a_task_the_server_cancels_and_no_faulted_task_is_one() {
        let mut seeds = 0;
        for seed in 0..200 {
            let p = generate(seed, &Knobs::default());
            let cancelled: Vec<&TaskPlan> = p
                .tasks
                .iter()
                .filter(|t| t.steps.iter().any(|s| s.status == ScriptStatus::Cancelled))
                .collect();
            seeds += usize::from(!cancelled.is_empty());
            for t in cancelled {
                assert!(
                    !p.faults.iter().any(|f| matches!(
                        f.kind,
                        FaultKind::RemoteDown { task } | FaultKind::DoomedVersion { task, .. }
                            if task == t.n
                    )),
                    "seed {seed}: task {} has a fault and a self-cancel",
                    t.n
                );
            }
        }
        assert!((40..=100).contains(&seeds), "{seeds} of 200 seeds");
    }

    #[test]
    fn knobs_fix_workers_and_tasks() {
        let p = generate(
            5,
            &Knobs {
                workers: Some(7),
                tasks: Some(31),
                gateway: GatewayMode::Ledger,
            },
        );
        assert_eq!((p.workers, p.tasks.len()), (7, 31));
        let lg = generate(
            5,
            &Knobs {
                workers: Some(7),
                tasks: Some(31),
                gateway: GatewayMode::Langgraph,
            },
        );
        assert_eq!(lg.gateway, GatewayMode::Langgraph);
        assert_eq!(
            (&lg.tasks, &lg.faults),
            (&p.tasks, &p.faults),
            "same workload and faults"
        );
        assert!(
            !p.to_json().contains("\"gateway\":")
                && lg.to_json().contains("\"gateway\": \"langgraph\"")
        );
    }
}
