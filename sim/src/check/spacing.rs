//! Poll spacing, seen from the remote server (DOMAIN §4, issue 13 item 6): a task the engine
//! still has reason to poll hears from it at least once every [`max_poll_gap`], a bound
//! derived from the policy, plus whatever the faults active meanwhile may add. An uncapped
//! backoff shows as a gap far beyond it, where "settled within the liveness deadline" would
//! still pass.
//!
//! Each gap runs between two calls the server took about the task (its submit, a poll, a
//! cancel or an answer). A fault that can keep workers from polling — on a worker, its links,
//! the store or the network, or a slow remote — adds the part of its window inside the gap
//! plus one lease (a stalled holder's poll lease must expire first). A served error is a
//! report of the outage, not a disturbance: after it the capped backoff applies. Once the
//! server's last report calls for a terminal event the engine stops polling, and the tail
//! after the last call is never judged: the run ends when it settles.

use super::disturbances::Disturbances;
use super::facts::Facts;
use super::{Invariant, Verdict};
use crate::history::{RemoteOp, Seen};
use crate::plan::timing::{sim_policy, PASS_INTERVAL};
use std::collections::BTreeMap;
use std::time::Duration;
use tasklatch_core::policy::INPUT_REQUIRED_FLOOR;

/// Slack for call latency, store round trips and a pass's own calls (an uncapped backoff
/// first shows as a delay of twice the cap, 80 s, which stays beyond the bound).
const SLACK: Duration = Duration::from_secs(12);

/// Hints the plans' servers give stay below this.
const LONGEST_HINT: Duration = Duration::from_secs(10);

/// The longest an undisturbed engine leaves a pollable task unpolled: the longest scheduled
/// delay (the poll backoff's cap, the `input_required` floor, the poll interval or a server's
/// hint), plus a pass and slack.
pub fn max_poll_gap() -> Duration {
    let p = sim_policy();
    let longest_delay = p
        .max_poll_backoff
        .max(INPUT_REQUIRED_FLOOR)
        .max(p.poll_interval)
        .max(LONGEST_HINT);
    longest_delay + PASS_INTERVAL + SLACK
}

pub(super) fn check(f: &Facts<'_>, v: &mut Verdict) {
    let lease_us = sim_policy().poll_lease.as_micros() as u64;
    let base_us = max_poll_gap().as_micros() as u64;
    let disturbances = Disturbances::of(f, lease_us, |kind| kind.excuse().polls);
    let allowed = |from: u64, to: u64| base_us + disturbances.extra(from, to);
    // Per stored task: when the server last took a call about it, and whether its last report
    // calls for a terminal event.
    let mut last: BTreeMap<u32, (Option<u64>, bool)> = BTreeMap::new();
    for (&n, &task_id) in &f.task_ids {
        if f.inserted.contains(task_id) && f.remote.contains_key(&n) {
            last.insert(n, (None, false));
        }
    }
    for (i, e) in f.entries.iter().enumerate() {
        let Seen::RemoteServed {
            remote_id,
            op,
            answer,
            ..
        } = &e.event
        else {
            continue;
        };
        let Some(&n) = f.n_of_remote.get(remote_id.as_str()) else {
            continue;
        };
        let Some((since, finished)) = last.get_mut(&n) else {
            continue;
        };
        if let Some(from) = since.filter(|_| !*finished) {
            let gap_us = e.at_us.saturating_sub(from);
            let bound_us = allowed(from, e.at_us);
            if gap_us > bound_us {
                v.push(
                    Invariant::Live,
                    f.label(f.task_ids[&n]),
                    Some(i),
                    format!(
                        "the remote server heard nothing about the task for {} s (the policy \
                         and the faults meanwhile allow {} s)",
                        gap_us / 1_000_000,
                        bound_us / 1_000_000
                    ),
                );
            }
        }
        let reports = matches!(op, RemoteOp::Submit | RemoteOp::Status | RemoteOp::Cancel);
        let terminal =
            reports && matches!(f.event_of(n, answer), Some(Some(ev)) if ev.status.is_terminal());
        *since = Some(e.at_us);
        *finished = terminal || *finished;
    }
}

#[cfg(test)]
mod tests {
    use crate::check::test_support::{at, stored_task};
    use crate::check::{check, Invariant};
    use crate::history::{RemoteOp, Seen};
    use crate::plan::fault::{Fault, FaultKind};
    use crate::plan::generate::{generate, Knobs};
    use crate::wire::mcp::{McpAnswer, WireReport};

    fn working() -> McpAnswer {
        McpAnswer::Report(WireReport {
            task_id: "r1".into(),
            status: "working".into(),
            hint: None,
            result: None,
            artifact: None,
            error: None,
            input_request: None,
        })
    }

    /// A stored task polled at 0 s, 30 s and 130 s, under `faults`: the live verdicts.
    fn gap_verdicts(faults: Vec<Fault>) -> Vec<String> {
        let mut plan = generate(0, &Knobs::default());
        plan.faults = faults;
        let n = plan.tasks[0].n;
        let mut entries = stored_task(n);
        for secs in [0, 30, 130] {
            entries.push(at(
                secs,
                "mcp",
                Seen::RemoteServed {
                    remote_id: "r1".into(),
                    op: RemoteOp::Status,
                    answer: working(),
                    dropped: false,
                },
            ));
        }
        check(&plan, &entries)
            .violations
            .into_iter()
            .filter(|v| v.invariant == Invariant::Live && v.detail.contains("heard nothing"))
            .map(|v| v.detail)
            .collect()
    }

    #[test]
    fn a_gap_beyond_the_policy_bound_is_flagged_unless_faults_explain_it() {
        let flagged = gap_verdicts(Vec::new());
        assert_eq!(flagged.len(), 1, "{flagged:?}");
        assert!(flagged[0].contains("for 100 s"), "{flagged:?}");
        let crash = Fault {
            at_ms: 40_000,
            for_ms: 30_000,
            kind: FaultKind::Crash { worker: 0 },
        };
        assert!(
            gap_verdicts(vec![crash]).is_empty(),
            "a crash explains 45 s more"
        );
    }
}
