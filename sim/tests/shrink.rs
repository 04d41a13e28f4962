//! Shrinking is deterministic and keeps the failure: the same seed shrinks to the same plan,
//! which fails with the same invariant and has no more faults than the original.
#![cfg(feature = "mutations")]

use std::sync::Arc;
use tasklatch_core::mutation::Mutant;
use tasklatch_sim::campaign::shrink::{shrink, ShrinkOptions};
use tasklatch_sim::campaign::{run_plan, BackendFactory};
use tasklatch_sim::plan::sim_policy;
use tasklatch_sim::plan::{generate, Knobs};
use tasklatch_sim::run::Backend;
use tasklatch_sim::run::RunOptions;

#[test]
fn the_same_seed_shrinks_to_the_same_failing_plan() {
    let factory: BackendFactory = Arc::new(|_| Ok(Backend::memory(sim_policy())));
    let mutant = Mutant::FingerprintCheckSkipped;
    let opts = ShrinkOptions {
        max_runs: 60,
        threads: 2,
        run: RunOptions::default(),
        mutant: Some(mutant),
    };
    let plan = generate(0, &Knobs::default());
    let quiet = |_| {};
    let a = shrink(plan.clone(), factory.clone(), &opts, &quiet)
        .expect("seed 0 fails under the mutant");
    let b = shrink(plan.clone(), factory, &opts, &quiet).expect("seed 0 fails under the mutant");
    assert_eq!(a.plan, b.plan, "shrinking must be deterministic");
    assert_eq!(a.runs, b.runs);
    assert!(a.plan.faults.len() <= plan.faults.len() && a.plan.tasks.len() < plan.tasks.len());
    let replay = run_plan(
        &a.plan,
        Backend::memory(sim_policy()),
        &RunOptions::default(),
        Some(mutant),
    );
    let first = replay.verdict.first().expect("the shrunk plan still fails");
    assert_eq!(first.invariant, a.fingerprint.invariant);
}
