//! Coverage marks must be reached (TigerBeetle's marks): every mark of `Feature::ALL` not marked
//! rare is hit by at least one seed of the in-memory campaign 0..200. A new fault kind or
//! workload feature that the plans never draw — or a change that stops drawing one — fails here
//! instead of silently weakening the checks that depend on it.

use std::collections::BTreeMap;
use tasklatch_sim::campaign::{backends, run_campaign, threads, CampaignOptions};
use tasklatch_sim::plan::Feature;
use tasklatch_sim::plan::Knobs;
use tasklatch_sim::run::RunOptions;

#[test]
fn every_mark_not_marked_rare_is_reached_by_seeds_0_to_200() {
    let opts = CampaignOptions {
        seeds: 0..200,
        knobs: Knobs::default(),
        run: RunOptions::default(),
        threads: threads(None, false),
        mutant: None,
        stop_at_first_failure: false,
    };
    let report = run_campaign(&opts, backends(false), &|_| {})
        .unwrap_or_else(|e| panic!("the campaign could not run: {e}"));
    let coverage: BTreeMap<Feature, u64> = report.coverage();
    assert_eq!(
        coverage.len(),
        Feature::ALL.len(),
        "the coverage lists every mark, zeros included"
    );
    let missed: Vec<&str> = coverage
        .iter()
        .filter(|(f, n)| **n == 0 && !f.rare())
        .map(|(f, _)| f.name())
        .collect();
    assert!(
        missed.is_empty(),
        "no seed of 0..200 reached these marks (draw them, or mark them rare with a reason): {missed:?}"
    );
}
