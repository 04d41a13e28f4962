//! Which fault kinds and workload features took effect in a run, by name.

use crate::history::{Entry, Event};
use crate::plan::Plan;
use std::collections::BTreeSet;

/// Every fault kind and feature that took effect in a run.
pub fn fired(plan: &Plan, entries: &[Entry]) -> BTreeSet<String> {
    let mut kinds = BTreeSet::new();
    for e in entries {
        match &e.event {
            Event::FaultFired { index } => {
                if let Some(f) = plan.faults.get(*index) {
                    kinds.insert(f.name());
                }
            }
            Event::Exercised { what } => {
                kinds.insert(what.clone());
            }
            _ => {}
        }
    }
    kinds
}
