//! Same seed, same history: every in-memory seed replays to the same history hash, and
//! different seeds give different histories.

use std::collections::BTreeSet;
use tasklatch_sim::plan::sim_policy;
use tasklatch_sim::plan::{generate, Knobs};
use tasklatch_sim::run::Backend;
use tasklatch_sim::run::{run, RunOptions};

fn hash_of(seed: u64) -> String {
    let plan = generate(seed, &Knobs::default());
    run(&plan, Backend::memory(sim_policy()), &RunOptions::default()).hash
}

#[test]
fn fifty_memory_seeds_replay_bit_identically() {
    let mut distinct = BTreeSet::new();
    for seed in 0..50 {
        let first = hash_of(seed);
        let second = hash_of(seed);
        assert_eq!(first, second, "seed {seed} replayed to a different history");
        distinct.insert(first);
    }
    assert_eq!(
        distinct.len(),
        50,
        "different seeds must give different histories"
    );
}

fn pg_hash_of(seed: u64) -> String {
    let plan = generate(seed, &Knobs::default());
    let backend = Backend::postgres(sim_policy(), None)
        .unwrap_or_else(|e| panic!("Postgres for the simulation: {e}"));
    run(&plan, backend, &RunOptions::default()).hash
}

#[test]
fn five_postgres_seeds_replay_bit_identically_and_match_the_model() {
    for seed in 0..5 {
        let first = pg_hash_of(seed);
        let second = pg_hash_of(seed);
        assert_eq!(
            first, second,
            "seed {seed} replayed to a different history on Postgres"
        );
        assert_eq!(
            first,
            hash_of(seed),
            "seed {seed}: Postgres and the in-memory model saw different histories"
        );
    }
}
