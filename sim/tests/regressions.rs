//! Every regression fixture passes on the current engine; built with the mutations feature,
//! every mutant's fixture still catches its mutant with the same invariant, and the fixtures of
//! the mutants that live in SQL (lease guards, ledger uniqueness) catch them with Postgres in the
//! loop too.

use std::path::PathBuf;
use tasklatch_sim::campaign::fixture::Fixture;
use tasklatch_sim::campaign::run_plan;
use tasklatch_sim::plan::sim_policy;
use tasklatch_sim::run::Backend;
use tasklatch_sim::run::RunOptions;

fn fixtures() -> Vec<(PathBuf, Fixture)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/regressions");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no regression fixtures in {}",
        dir.display()
    );
    files
        .into_iter()
        .map(|p| {
            let f = Fixture::read(&p).unwrap_or_else(|e| panic!("{e}"));
            (p, f)
        })
        .collect()
}

#[test]
fn every_fixture_passes_on_the_current_engine() {
    for (path, f) in fixtures() {
        let out = run_plan(
            &f.plan,
            Backend::memory(sim_policy()),
            &RunOptions::default(),
            None,
        );
        assert!(
            out.verdict.passed(),
            "{}: {:?}",
            path.display(),
            out.verdict.first()
        );
    }
}

/// Replays every mutant fixture whose mutant `selected` picks, on the backend `backend` makes
/// for it, requires the fixture's invariant to break, and returns the mutants caught.
#[cfg(feature = "mutations")]
fn catch_with_fixtures(
    selected: impl Fn(tasklatch_core::mutation::Mutant) -> bool,
    backend: impl Fn(tasklatch_core::mutation::Mutant) -> Backend,
) -> std::collections::BTreeSet<tasklatch_core::mutation::Mutant> {
    let mut caught = std::collections::BTreeSet::new();
    for (path, f) in fixtures() {
        let Some(name) = &f.mutant else { continue };
        let mutant: tasklatch_core::mutation::Mutant = name
            .parse()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if !selected(mutant) {
            continue;
        }
        let out = run_plan(
            &f.plan,
            backend(mutant),
            &RunOptions::default(),
            Some(mutant),
        );
        let first = out
            .verdict
            .first()
            .unwrap_or_else(|| panic!("{}: mutant {name} survived its fixture", path.display()));
        assert_eq!(
            Some(first.invariant.to_string()),
            f.invariant,
            "{}: {first}",
            path.display()
        );
        caught.insert(mutant);
    }
    caught
}

#[cfg(feature = "mutations")]
#[test]
fn every_mutant_fixture_still_catches_its_mutant() {
    use tasklatch_core::mutation::Mutant;
    let caught = catch_with_fixtures(|_| true, |_| Backend::memory(sim_policy()));
    assert_eq!(
        caught.len(),
        Mutant::ALL.len(),
        "every planted mutant needs a fixture"
    );
}

#[cfg(feature = "mutations")]
#[test]
fn every_sql_mutant_fixture_catches_its_mutant_on_postgres() {
    use tasklatch_core::mutation::Mutant;
    let caught = catch_with_fixtures(
        |m| m.lives_in_sql(),
        |m| {
            Backend::postgres(sim_policy(), Some(m))
                .unwrap_or_else(|e| panic!("Postgres for the simulation: {e}"))
        },
    );
    let in_sql = Mutant::ALL.iter().filter(|m| m.lives_in_sql()).count();
    assert!(in_sql >= 4, "expected the SQL guard and ledger mutants");
    assert_eq!(caught.len(), in_sql, "every SQL mutant needs a fixture");
}
