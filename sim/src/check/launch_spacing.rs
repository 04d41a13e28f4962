//! Launches back off (DOMAIN §3: work per version is bounded): whatever the last launch of a
//! task version met — a 409, a refusal, an unanswered call, a run that failed — the next launch
//! of that version waits at least the policy's shortest delay (`retry_base`, equal to the run
//! check interval and the release backoff). An engine that retries at once launches into an
//! outage on every pass: a storm against a peer that is already down.
//!
//! Read from the ports' launch records: two launches of one version by one worker start at
//! least [`SHORTEST_DELAY_MS`] apart, counted from the end of the first. Delays are due times
//! stamped on the worker's own clock, so pairs on different workers (whose clocks may differ by
//! the allowed skew) are not judged, nor are workers whose clock a fault moves.

use super::facts::Facts;
use super::{Invariant, Verdict};
use crate::history::{parse_key, Seen};
use crate::plan::fault::FaultKind;
use crate::plan::naming::{task_label, worker_number};
use crate::plan::timing::sim_policy;
use std::collections::{BTreeMap, BTreeSet};

/// The shortest delay any outcome of a launch schedules before the version's next launch, in
/// ms: the simulated policy's `retry_base` (2 s), less a tick of slack.
const SHORTEST_DELAY_MS: u64 = 1_990;

pub(super) fn check(f: &Facts<'_>, v: &mut Verdict) {
    debug_assert!(sim_policy().retry_base.as_millis() as u64 > SHORTEST_DELAY_MS);
    debug_assert!(sim_policy().run_check_interval.as_millis() as u64 > SHORTEST_DELAY_MS);
    let moved = workers_with_moved_clocks(f);
    // (worker, task id, version) → (entry, end µs) of the last launch.
    let mut last: BTreeMap<(u32, &str, u64), (usize, u64)> = BTreeMap::new();
    for (i, e) in f.entries.iter().enumerate() {
        let Seen::PortLaunch {
            lane,
            key,
            started_us,
            ..
        } = &e.event
        else {
            continue;
        };
        let (Some(w), Some((id, version, _))) = (
            lane.split('/').next().and_then(worker_number),
            parse_key(key),
        ) else {
            continue;
        };
        if moved.contains(&w) {
            continue;
        }
        if let Some((prev, end_us)) = last.insert((w, id, version), (i, e.at_us)) {
            let gap_ms = started_us.saturating_sub(end_us) / 1_000;
            if gap_ms < SHORTEST_DELAY_MS {
                v.push(
                    Invariant::Noisy,
                    f.n_of.get(id).map(|n| task_label(*n)),
                    Some(i),
                    format!(
                        "{lane} launched version {version} again {gap_ms} ms after its last \
                         launch ended (entry {prev}): no backoff"
                    ),
                );
            }
        }
    }
}

/// The workers a fault of the plan skews or steps the clock of.
fn workers_with_moved_clocks(f: &Facts<'_>) -> BTreeSet<u32> {
    let moves = f.plan.faults.iter().filter_map(|fault| match fault.kind {
        FaultKind::Skew { worker, .. } | FaultKind::StepAtNews { worker, .. } => Some(worker),
        FaultKind::PauseAfterAnswer {
            worker,
            clock_back_ms,
            ..
        } if clock_back_ms > 0 => Some(worker),
        _ => None,
    });
    moves.collect()
}
