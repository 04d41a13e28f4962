//! Degraded tracking is notified (DOMAIN §4, issue 13 item 4): when a task's polls keep
//! failing, the conversation hears of it — each time, not only the first.
//!
//! An *episode* is a run of status polls of one remote task that the server answered with a
//! transient error, back to back (anything else the server served about the task ends it: the
//! engine may have taken it for a report). It is judged only when the engine's error count
//! started from zero (the report before it reached a worker and was applied). The engine's
//! tracking degrades at the store's [`DEGRADED_AFTER`]th accepted poll write of the episode
//! (each of those polls failed). If the server then kept failing the task for the
//! [`delivery_window`] plus whatever the disturbing faults meanwhile may add, no later report
//! could supersede the degraded event before it was sent:
//!
//! - a launch whose prompt carries degraded tracking was served after the episode began
//!   (`lost` otherwise: a second degradation deduplicated against the first one, a latch not
//!   reset on recovery, shows here and nowhere else, since the final state is still delivered);
//! - from that deadline until the count may have been reset, no launch of the task carries
//!   anything else (`ordered` otherwise: a stale event). An empty event is `noisy` anywhere.
//!
//! Reads only what the world saw: the remote server's served answers, the worker ports'
//! unanswered calls, the store's accepted writes, the gateway's served launches, the users'
//! cancels, requeues and thread deletions, the runs' ends and the plan's faults.

use super::disturbances::Disturbances;
use super::facts::Facts;
use super::{Invariant, Verdict};
use crate::history::write_action::WriteAction;
use crate::history::{LaunchAnswer, RemoteOp, Seen};
use crate::plan::timing::{sim_policy, PASS_INTERVAL};
use crate::wire::mcp::McpAnswer;
use std::time::Duration;
use tasklatch_core::lease::LeaseKind;
use tasklatch_core::policy::DEGRADED_AFTER;
use tasklatch_core::ports::RunStatus;

/// Slack for call latency, store round trips and the notification pass's own calls.
const SLACK: Duration = Duration::from_secs(8);

/// How long an undisturbed engine may take from recording the degraded event to a served
/// launch of it: a run check, two passes and slack — plus the retry backoff when an older
/// version of the task may be waiting out a retry (a newer one is frozen at the next claim).
pub fn delivery_window(older_retrying: bool) -> Duration {
    let p = sim_policy();
    let retry = if older_retrying {
        p.max_retry_backoff
    } else {
        Duration::ZERO
    };
    retry + p.run_check_interval + 2 * PASS_INTERVAL + SLACK
}

/// One episode of back-to-back transient errors of a task's status polls.
struct Episode {
    /// History index of the first error.
    start: usize,
    /// Whether the engine's error count started from zero: the answer served last before the
    /// first error was a report the worker got, it was applied (the store accepted the task's
    /// row or a poll write between them) and no poll between them went unanswered.
    from_zero: bool,
}

/// Whether entry `e` is the store accepting a poll result of `task_id`.
fn poll_applied(e: &Seen, task_id: &str) -> bool {
    match e {
        Seen::StoreWrite {
            lease: LeaseKind::Poll,
            rows,
            ..
        } => rows.iter().any(|r| {
            r.task_id == task_id && r.action == WriteAction::ApplyPoll && r.outcome.is_ok()
        }),
        _ => false,
    }
}

pub(super) fn check(f: &Facts<'_>, v: &mut Verdict) {
    let lease_us = sim_policy().notify_lease.as_micros() as u64;
    for (&n, &task_id) in &f.task_ids {
        let Some(&(remote_id, _)) = f.remote.get(&n) else {
            continue;
        };
        // Two rows polling one remote task keep two error counts: no episode is judged.
        if !f.inserted.contains(task_id) || f.holders.get(remote_id).is_some_and(|h| h.len() > 1) {
            continue;
        }
        let task = Task {
            f,
            n,
            task_id,
            remote_id,
            disturbances: Disturbances::of(f, lease_us, |kind| kind.excuse().launches.hold(n)),
        };
        for (ep, cleared) in task.episodes() {
            task.judge(ep, cleared, v);
        }
    }
}

/// One stored task whose error episodes are judged.
struct Task<'f, 'a> {
    f: &'f Facts<'a>,
    n: u32,
    task_id: &'a str,
    remote_id: &'a str,
    /// Faults that may hold the task's launches back.
    disturbances: Disturbances,
}

/// What the scan of a task's answers knows since the last answer that was not an error:
/// whether it was a report the worker got (a dropped one ends its poll as a failure), and
/// since then whether a poll write was accepted and whether a poll went unanswered.
#[derive(Default)]
struct SinceLastAnswer {
    reported: bool,
    applied: bool,
    unanswered: bool,
}

impl Task<'_, '_> {
    /// The task's episodes of back-to-back errors, each with the history index where it ended
    /// (an answer that may have reset the engine's count, or the end of the history).
    fn episodes(&self) -> Vec<(Episode, usize)> {
        let mut done = Vec::new();
        let mut episode: Option<Episode> = None;
        let mut since = SinceLastAnswer::default();
        for (i, e) in self.f.entries.iter().enumerate() {
            match &e.event {
                Seen::RemoteServed {
                    remote_id: r,
                    op,
                    answer,
                    dropped,
                } if r == self.remote_id => {
                    // Only an error the worker got ends a poll as a failure; anything else the
                    // server served about the task (a dropped reply, a report, a cancel's or an
                    // answer's reply) may have reset the engine's count.
                    let failed = *op == RemoteOp::Status
                        && !*dropped
                        && matches!(answer, McpAnswer::Unavailable(_));
                    if failed {
                        episode.get_or_insert(Episode {
                            start: i,
                            from_zero: since.reported && since.applied && !since.unanswered,
                        });
                    } else {
                        done.extend(episode.take().map(|ep| (ep, i)));
                        since = SinceLastAnswer {
                            reported: !*dropped
                                && matches!(op, RemoteOp::Status | RemoteOp::Submit)
                                && matches!(
                                    answer,
                                    McpAnswer::Report(_) | McpAnswer::Created { .. }
                                ),
                            ..SinceLastAnswer::default()
                        };
                    }
                }
                Seen::PortRemote {
                    remote_id: r,
                    op: RemoteOp::Status,
                    answered: false,
                    ..
                } if r == self.remote_id => since.unanswered = true,
                Seen::StoreInsert {
                    task_id: t,
                    outcome: Ok(_),
                    ..
                } if t == self.task_id => since.applied = true,
                other if poll_applied(other, self.task_id) => since.applied = true,
                _ => {}
            }
        }
        done.extend(episode.map(|ep| (ep, self.f.entries.len())));
        done
    }

    /// Judges the episode that ended at history index `cleared`: once the engine's count
    /// reached DEGRADED_AFTER, a launch carrying degraded tracking must follow within the
    /// delivery window (plus disturbances), and no launch until `cleared` may carry a stale
    /// event without it.
    fn judge(&self, ep: Episode, cleared: usize, v: &mut Verdict) {
        let (f, task_id) = (self.f, self.task_id);
        if !ep.from_zero {
            return;
        }
        // The engine's count reaches DEGRADED_AFTER at the store's DEGRADED_AFTER-th accepted
        // poll write of the episode: every poll it applied meanwhile failed.
        let Some(degraded_at) = (ep.start..cleared)
            .filter(|&i| poll_applied(&f.entries[i].event, task_id))
            .nth(DEGRADED_AFTER as usize - 1)
        else {
            return;
        };
        let degraded_us = f.entries[degraded_at].at_us;
        let cleared_us = f.entries.get(cleared).map_or(u64::MAX, |e| e.at_us);
        let cleared_us = cleared_us.min(f.entries.last().map_or(0, |e| e.at_us));
        let window_us = delivery_window(retrying(f, task_id, degraded_at)).as_micros() as u64;
        // The window plus, for each disturbance in between, its part inside and a lease (a
        // stalled holder's lease must expire first).
        let deadline_us =
            degraded_us + window_us + self.disturbances.extra(degraded_us, cleared_us);
        if cleared_us <= deadline_us || excused(f, self.n, task_id, degraded_at, cleared_us) {
            return;
        }
        self.stale_launch(cleared, deadline_us, v);
        let notified = f.launches.iter().any(|l| {
            l.task_id == task_id
                && l.entry > ep.start
                && l.shown.as_ref().is_some_and(|s| s.tracking_degraded)
        });
        if !notified {
            v.push(
                Invariant::Lost,
                f.label(task_id),
                Some(degraded_at),
                format!(
                    "tracking degraded ({DEGRADED_AFTER} failed polls applied in a row) and \
                     the server kept failing the task for {} s more, yet no launch since the \
                     first of them carried degraded tracking",
                    (cleared_us - degraded_us) / 1_000_000
                ),
            );
        }
    }

    /// From the deadline until the count may have been reset, the latest event is the
    /// degraded one: a launch of anything else sends a stale event.
    fn stale_launch(&self, cleared: usize, deadline_us: u64, v: &mut Verdict) {
        let f = self.f;
        if let Some(stale) = f.launches.iter().find(|l| {
            l.task_id == self.task_id
                && l.entry < cleared
                && f.entries[l.entry].at_us > deadline_us
                && !l.shown.as_ref().is_some_and(|s| s.tracking_degraded)
        }) {
            v.push(
                Invariant::Ordered,
                f.label(self.task_id),
                Some(stale.entry),
                format!(
                    "a launch of version {} while tracking was degraded carries a stale event \
                     without the degraded tracking",
                    stale.version
                ),
            );
        }
    }
}

/// Whether something the world saw excuses a missing or stale degraded notification: the
/// owner asked to cancel the task (polls are no longer applied), an operator requeued it (on
/// purpose, an older event), its thread was deleted, or a run of the
/// task launched before the degradation had not ended when it came (the new version waits
/// for it).
fn excused(f: &Facts<'_>, n: u32, task_id: &str, degraded_at: usize, cleared_us: u64) -> bool {
    let cancelled = f.entries.iter().any(|e| {
        e.at_us <= cleared_us && matches!(&e.event, Seen::CancelSent { n: c, .. } if *c == n)
    });
    let in_flight = f.runs.values().any(|r| {
        r.task_id == task_id
            && r.created < degraded_at
            && r.end.is_none_or(|(end, _)| end > degraded_at)
    });
    let requeued = f.entries.iter().any(|e| {
        e.at_us <= cleared_us
            && matches!(&e.event, Seen::StoreRequeue { task_id: t, .. } if t == task_id)
    });
    cancelled || in_flight || requeued || f.thread_deleted(n)
}

/// Whether an older version of the task may be waiting out a retry at history index `at`: its
/// last launch before then was not answered with a run that succeeded before then.
fn retrying(f: &Facts<'_>, task_id: &str, at: usize) -> bool {
    let Some(last) = f
        .launches
        .iter()
        .rev()
        .find(|l| l.task_id == task_id && l.entry < at)
    else {
        return false;
    };
    let succeeded = match last.answer {
        LaunchAnswer::Started { run } => f
            .runs
            .get(run.as_str())
            .is_some_and(|r| matches!(r.end, Some((end, RunStatus::Success)) if end < at)),
        _ => false,
    };
    !succeeded
}
