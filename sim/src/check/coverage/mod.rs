//! What took effect in a run: the coverage marks ([`Feature`]) a seed hit, read from its
//! history, and the observers the store host uses to mark conditions only a sequence of writes
//! shows. The campaign summary lists every mark with its count, zeros included; a test fails
//! when a mark not marked rare is hit by no seed of 0..200.

pub mod confirmed_runs;
pub mod fresh_dead_letters;
pub mod interleavings;
pub mod skew;
pub mod spent_budget;

use crate::history::{Entry, Seen};
use crate::plan::{Feature, Plan, WorkloadMark};
use std::collections::BTreeSet;

/// Every mark that took effect in a run.
pub fn fired(plan: &Plan, entries: &[Entry]) -> BTreeSet<Feature> {
    let mut marks = BTreeSet::new();
    for e in entries {
        match &e.event {
            Seen::FaultFired { index } => {
                if let Some(f) = plan.faults.get(*index) {
                    marks.insert(f.feature().into());
                }
            }
            Seen::Exercised { what } => {
                marks.insert(*what);
            }
            _ => {}
        }
    }
    marks.extend(
        interleavings::interleavings(entries)
            .into_iter()
            .map(Feature::from),
    );
    if fresh_dead_letters::retention_met_fresh_dead_letter(entries) {
        marks.insert(WorkloadMark::RetentionMetFreshDeadLetter.into());
    }
    if skew::skewed_both_ways(plan, entries) {
        marks.insert(WorkloadMark::SkewBothWays.into());
    }
    marks
}
