//! Which fault kinds and workload features took effect in a run, by name.

use crate::history::{Entry, Event};
use crate::plan::{BadEnd, Fault, FaultKind, Plan, Service};
use std::collections::BTreeSet;

/// A pause at least this long outlives a lease of the simulation's engines.
const LEASE_MS: u64 = 15_000;

/// The coverage name of a planned fault.
pub fn fault_name(fault: &Fault) -> String {
    let svc = |s: &Service| s.host();
    match &fault.kind {
        FaultKind::Crash { .. } => "worker_crash_restart".into(),
        FaultKind::Pause { .. } if fault.for_ms > LEASE_MS => "worker_pause_past_lease".into(),
        FaultKind::Pause { .. } => "worker_stall_within_lease".into(),
        FaultKind::Partition { service, .. } => format!("partition_worker_{}", svc(service)),
        FaultKind::Hold { service, .. } => format!("hold_worker_{}", svc(service)),
        FaultKind::LoseReplies { service, .. } => {
            format!("reply_lost_after_commit_{}", svc(service))
        }
        FaultKind::Latency { .. } => "latency_spike".into(),
        FaultKind::Skew { .. } => "clock_skew".into(),
        FaultKind::GatewayBusy => "launcher_409_window".into(),
        FaultKind::GatewayErrors {
            after_commit: false,
        } => "launcher_transient_error".into(),
        FaultKind::GatewayErrors { after_commit: true } => "launcher_error_after_commit".into(),
        FaultKind::LookupErrors => "launcher_lookup_error".into(),
        FaultKind::LostRuns => "run_missing".into(),
        FaultKind::SlowRuns { .. } => "run_slow".into(),
        FaultKind::BadRuns { end } => match end {
            BadEnd::Error => "run_failed".into(),
            BadEnd::Timeout => "run_timed_out".into(),
            BadEnd::Interrupted => "run_interrupted".into(),
        },
        FaultKind::RemoteErrors => "remote_transient_error".into(),
        FaultKind::SlowRemote { .. } => "remote_slow".into(),
    }
}

/// Every fault kind and feature that took effect in a run.
pub fn fired(plan: &Plan, entries: &[Entry]) -> BTreeSet<String> {
    let mut kinds = BTreeSet::new();
    for e in entries {
        match &e.event {
            Event::FaultFired { index } => {
                if let Some(f) = plan.faults.get(*index) {
                    kinds.insert(fault_name(f));
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
