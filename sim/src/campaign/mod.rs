//! Campaigns: many seeds, run in parallel (each simulation on its own thread, single-threaded
//! and deterministic inside), with progress reports, coverage counts and failure lines.

pub mod fixture;
pub mod merge;
pub mod mutants;
pub mod replay;
pub mod replay_command;
pub mod shard;
pub mod shrink;
pub mod summary;
pub(crate) mod trace;

use crate::check::coverage;
use crate::check::{Counts, Violation};
use crate::history::Seen;
use crate::plan::generate::{generate, Knobs};
use crate::plan::timing::sim_policy;
use crate::plan::Feature;
use crate::plan::Plan;
use crate::run::backend::Backend;
use crate::run::world::{run, RunOptions, RunOutcome};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tasklatch_core::mutation::Mutant;

/// Builds a fresh backend for each run (the Postgres backend creates a fresh database).
pub type BackendFactory = Arc<dyn Fn(Option<Mutant>) -> Result<Backend, String> + Send + Sync>;

/// The backends runs use: a fresh in-memory model each, or with `postgres` a fresh database
/// each (where, see `tasklatch_pg::harness`).
pub fn backends(postgres: bool) -> BackendFactory {
    if postgres {
        Arc::new(|mutant| Backend::postgres(sim_policy(), mutant))
    } else {
        Arc::new(|_| Ok(Backend::memory(sim_policy())))
    }
}

/// Parallel simulations: `requested`, else one per core; on Postgres never more than the
/// cores (each run holds a database connection and a blocking thread).
pub fn threads(requested: Option<u32>, postgres: bool) -> usize {
    let cores = cores();
    let threads = requested.map_or(cores, |t| t as usize);
    if postgres {
        threads.min(cores)
    } else {
        threads
    }
}

/// The machine's cores (1 when unknown).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// How to run a campaign.
#[derive(Clone)]
pub struct CampaignOptions {
    /// Seeds to run.
    pub seeds: Range<u64>,
    /// What the command line fixes instead of the seed.
    pub knobs: Knobs,
    /// Tick and liveness bound.
    pub run: RunOptions,
    /// Parallel simulations.
    pub threads: usize,
    /// A planted bug to switch on in every run.
    pub mutant: Option<Mutant>,
    /// Stop at the first failing seed (mutant hunting).
    pub stop_at_first_failure: bool,
}

/// One seed's result.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedResult {
    /// The seed.
    pub seed: u64,
    /// The first violation, if the run failed.
    pub violation: Option<Violation>,
    /// How many violations.
    pub violations: usize,
    /// History hash.
    pub hash: String,
    /// Simulated time.
    pub sim: Duration,
    /// Wall time.
    pub wall: Duration,
    /// Fault kinds and features that took effect.
    pub fired: Vec<Feature>,
    /// The checker's counts for the run (delivered, lost, fenced writes refused, …).
    pub counts: Counts,
    /// History index of the first row rule the engine's own check found broken (only while a
    /// planted bug is active).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row_rule_broken: Option<usize>,
}

/// Progress so far.
#[derive(Clone, Copy, Debug, Default)]
pub struct Progress {
    /// Seeds finished.
    pub done: u64,
    /// Seeds that failed.
    pub failed: u64,
    /// Seeds in the campaign.
    pub total: u64,
    /// Simulated seconds so far.
    pub sim_secs: f64,
}

/// A finished campaign.
#[derive(Debug)]
pub struct CampaignReport {
    /// Per seed, in seed order (only seeds that ran).
    pub results: Vec<SeedResult>,
    /// Wall time of the whole campaign.
    pub wall: Duration,
}

impl CampaignReport {
    /// Seeds that failed.
    pub fn failures(&self) -> impl Iterator<Item = &SeedResult> {
        self.results.iter().filter(|r| r.violation.is_some())
    }

    /// Seeds per coverage mark, every mark of [`Feature::ALL`] included (zeros too).
    pub fn coverage(&self) -> BTreeMap<Feature, u64> {
        let mut counts: BTreeMap<Feature, u64> = Feature::ALL.iter().map(|f| (*f, 0)).collect();
        for r in &self.results {
            for k in &r.fired {
                *counts.entry(*k).or_insert(0) += 1;
            }
        }
        counts
    }

    /// Simulated seconds in all.
    pub fn sim_secs(&self) -> f64 {
        self.results.iter().map(|r| r.sim.as_secs_f64()).sum()
    }
}

/// Runs one plan with `mutant` switched on for this thread.
pub fn run_plan(
    plan: &Plan,
    backend: Backend,
    opts: &RunOptions,
    mutant: Option<Mutant>,
) -> RunOutcome {
    #[cfg(feature = "mutations")]
    let _active = tasklatch_core::mutation::activate(mutant);
    #[cfg(not(feature = "mutations"))]
    let _ = mutant;
    run(plan, backend, opts)
}

/// Runs seed `seed` of a campaign on a fresh backend.
fn run_seed(
    opts: &CampaignOptions,
    backends: &BackendFactory,
    seed: u64,
) -> Result<SeedResult, String> {
    let backend = backends(opts.mutant)?;
    let plan = generate(seed, &opts.knobs);
    let out = run_plan(&plan, backend, &opts.run, opts.mutant);
    Ok(SeedResult {
        seed,
        violation: out.verdict.first().cloned(),
        violations: out.verdict.violations.len(),
        hash: out.hash,
        sim: out.sim_elapsed,
        wall: out.wall,
        fired: coverage::fired(&plan, &out.entries).into_iter().collect(),
        counts: out.verdict.counts.clone(),
        row_rule_broken: out
            .entries
            .iter()
            .position(|e| matches!(e.event, Seen::RowRuleBroken { .. })),
    })
}

/// Runs every seed of `opts`, calling `progress` after each.
pub fn run_campaign(
    opts: &CampaignOptions,
    backends: BackendFactory,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<CampaignReport, String> {
    let started = Instant::now();
    let next = AtomicU64::new(opts.seeds.start);
    let stop = AtomicBool::new(false);
    let results = Mutex::new(Vec::new());
    let state = Mutex::new(Progress {
        total: opts.seeds.end.saturating_sub(opts.seeds.start),
        ..Default::default()
    });
    let error = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..opts.threads.max(1) {
            scope.spawn(|| loop {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                let seed = next.fetch_add(1, Ordering::SeqCst);
                if seed >= opts.seeds.end {
                    return;
                }
                let result = match run_seed(opts, &backends, seed) {
                    Ok(r) => r,
                    Err(e) => {
                        *error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                        stop.store(true, Ordering::SeqCst);
                        return;
                    }
                };
                let failed = result.violation.is_some();
                if failed && opts.stop_at_first_failure {
                    stop.store(true, Ordering::SeqCst);
                }
                let snapshot = {
                    let mut p = state.lock().unwrap_or_else(|p| p.into_inner());
                    p.done += 1;
                    p.failed += u64::from(failed);
                    p.sim_secs += result.sim.as_secs_f64();
                    *p
                };
                results
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(result);
                progress(snapshot);
            });
        }
    });
    if let Some(e) = error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    let mut results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    results.sort_by_key(|r| r.seed);
    Ok(CampaignReport {
        results,
        wall: started.elapsed(),
    })
}
