//! Launches back off (DOMAIN §3: work per version is bounded): whatever the last launch of a
//! task version met — a 409, a refusal, an unanswered call, a run that failed — the next launch
//! of that version waits at least the policy's shortest delay (`retry_base`, equal to the run
//! check interval and the release backoff). An engine that retries at once launches into an
//! outage on every pass: a storm against a peer that is already down.
//!
//! Read from the ports' launch records: two launches of one version by one worker start at
//! least [`SHORTEST_DELAY_MS`] apart, counted from the end of the first. Delays are due times
//! stamped on the worker's own clock, so pairs on different workers (whose clocks may differ by
//! the allowed skew) are not judged, nor are workers whose clock a fault moves. Nor are two
//! overlapping launches of one worker: they are two lanes' claims, the older lane stalled
//! mid-launch past its lease (its outcome is fenced and schedules nothing), so the next launch
//! is judged against the newer claim's.

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
    // (worker, task id, version) → (entry, start µs, end µs) of the last launch.
    let mut last: BTreeMap<(u32, &str, u64), (usize, u64, u64)> = BTreeMap::new();
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
        let this = (i, *started_us, e.at_us);
        let Some((prev, prev_start, end_us)) = last.insert((w, id, version), this) else {
            continue;
        };
        if *started_us < end_us {
            // Overlapping: two claims' launches, neither a retry of the other.
            if *started_us < prev_start {
                last.insert((w, id, version), (prev, prev_start, end_us));
            }
            continue;
        }
        let gap_ms = (started_us - end_us) / 1_000;
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

#[cfg(test)]
mod tests {
    use crate::check::test_support::at;
    use crate::check::{check, Invariant};
    use crate::history::{Entry, Seen};
    use crate::plan::generate::{generate, Knobs};

    /// A launch of version 1 of `t1` by `lane`, from `started_s` to `ended_s`.
    fn launch(lane: &str, started_s: u64, ended_s: u64) -> Entry {
        let event = Seen::PortLaunch {
            lane: lane.into(),
            key: "task:t1:1:0".into(),
            outcome: "unavailable".into(),
            started_us: started_s * 1_000_000,
        };
        at(ended_s, "worker-0", event)
    }

    fn without_backoff(entries: &[Entry]) -> usize {
        let mut plan = generate(0, &Knobs::default());
        plan.faults.clear();
        let verdict = check(&plan, entries);
        let hits = verdict.violations.iter();
        hits.filter(|v| v.invariant == Invariant::Noisy && v.detail.contains("no backoff"))
            .count()
    }

    #[test]
    fn overlapping_launches_are_two_claims_and_the_next_follows_the_newer() {
        // Lane 1 stalled mid-launch from 10 s to 40 s; lane 0 launched under a newer claim.
        let stalled = [
            launch("worker-0/0", 30, 31),
            launch("worker-0/1", 10, 40),
            launch("worker-0/0", 34, 35),
        ];
        assert_eq!(without_backoff(&stalled), 0);
        let storm = [launch("worker-0/0", 30, 31), launch("worker-0/0", 31, 32)];
        assert_eq!(without_backoff(&storm), 1);
    }
}
