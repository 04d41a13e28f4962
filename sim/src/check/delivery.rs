//! Delivery invariants: never lost, never duplicated, never unexpected, never noisy, ordered.

use super::facts::{Facts, Launch, Run};
use super::shown::Shown;
use super::{Invariant, Verdict};
use crate::history::write_action::WriteAction;
use crate::history::{parse_key, LaunchAnswer, RemoteOp, Seen};
use crate::plan::naming::task_label;
use crate::plan::timing::MAX_SKEW_MS;
use crate::wire::mcp::McpAnswer;
use std::collections::{BTreeMap, BTreeSet};
use tasklatch_core::policy::FAILURE_BUDGET;
use tasklatch_core::ports::RunStatus;
use tasklatch_core::store::RequeueOutcome;
use tasklatch_core::text::notification_prompt;

pub(super) fn check(f: &Facts<'_>, v: &mut Verdict) {
    count_deliveries(f, v);
    lost(f, v);
    duplicated(f, v);
    unexpected(f, v);
    noisy(f, v);
    ordered(f, v);
    frozen(f, v);
    queued(f, v);
}

/// A notification run the gateway queued behind an active run of its thread: the launch
/// should have been refused with 409 (DOMAIN §3 "Delivery": reject a busy thread instead of
/// queueing) — the engine took it for a started run and the busy signal was lost.
fn queued(f: &Facts<'_>, v: &mut Verdict) {
    for &(entry, run, key) in &f.queued {
        let task = parse_key(key).and_then(|(t, _, _)| f.label(t));
        v.push(
            Invariant::Fenced,
            task,
            Some(entry),
            format!("run {run} was queued behind a busy thread instead of answered 409"),
        );
    }
}

fn count_deliveries(f: &Facts<'_>, v: &mut Verdict) {
    v.counts.delivered = f
        .runs
        .values()
        .filter(|r| matches!(r.end, Some((_, RunStatus::Success))))
        .count() as u64;
    for e in f.entries {
        if let Seen::StoreWrite { rows, .. } = &e.event {
            for r in rows {
                match (&r.outcome, r.action) {
                    (Err(_), _) => v.counts.fenced_refused += 1,
                    (Ok(_), WriteAction::ThreadGone) => v.counts.dead_thread_gone += 1,
                    (Ok(_), WriteAction::BudgetExhausted) => v.counts.dead_budget += 1,
                    (Ok(_), WriteAction::CancelBudgetExhausted) => v.counts.dead_cancel += 1,
                    _ => {}
                }
            }
        }
    }
}

/// Counted-failure evidence for (task, version) from what the launcher and the ports saw:
/// failed runs, launches refused for the request itself, and lookups that found no run. A
/// launch or lookup the launcher left unanswered (unreachable, timed out, 5xx) is no evidence:
/// an outage is waited out, never counted (DOMAIN §3, §9). It can only over-count the engine's
/// own failure count, so it excuses a budget dead letter only when one may really have happened.
fn failure_evidence(f: &Facts<'_>, task_id: &str, version: u64) -> usize {
    let runs: BTreeSet<&str> = f
        .runs
        .values()
        .filter(|r| r.task_id == task_id && r.version == version)
        .map(|r| r.run)
        .collect();
    let failed_runs = f
        .runs
        .values()
        .filter(|r| {
            runs.contains(r.run) && matches!(r.end, Some((_, s)) if s != RunStatus::Success)
        })
        .count();
    let port_failures = f
        .entries
        .iter()
        .filter(|e| match &e.event {
            Seen::PortLaunch { key, outcome, .. } => {
                outcome == "failed"
                    && parse_key(key).is_some_and(|(t, ver, _)| t == task_id && ver == version)
            }
            Seen::PortLookup { run, outcome, .. } => {
                outcome == "missing" && runs.contains(run.as_str())
            }
            _ => false,
        })
        .count();
    failed_runs + port_failures
}

/// Never lost (DOMAIN §9): every stored task's final event — from the remote's truth at the
/// end, not from what the engine happened to poll (for a task a restart of the server forgot,
/// "unknown task", or the terminal report served before) — is the last one delivered on its
/// thread;
/// unless the thread was deleted, and then that event was refused with 404 and dead-lettered
/// as thread gone; or that event's own launches spent the failure budget.
fn lost(f: &Facts<'_>, v: &mut Verdict) {
    for (&n, &task_id) in &f.task_ids {
        if !f.inserted.contains(task_id) {
            continue;
        }
        let Some((Some(expected), judged_at)) = f.expected_event(n) else {
            continue;
        };
        let settled_before = f.served_before_forgotten(n);
        let wants: Vec<String> = std::iter::once(&expected)
            .chain(settled_before.as_ref())
            .map(notification_prompt)
            .collect();
        let delivered = f.delivered(task_id);
        if delivered
            .last()
            .is_some_and(|r| wants.iter().any(|w| r.prompt == w))
        {
            continue;
        }
        // The final event's versions: those whose served launches carried it, and the latest
        // the store recorded (a peer that checks the thread first fails a launch before any is
        // served, so only the worker's port saw it).
        let wanted: BTreeSet<u64> = f
            .launches
            .iter()
            .filter(|l| l.task_id == task_id && wants.iter().any(|w| l.prompt == w))
            .map(|l| l.version)
            .chain(latest_version(f, task_id))
            .collect();
        let spent = wanted
            .iter()
            .any(|&ver| failure_evidence(f, task_id, ver) >= FAILURE_BUDGET as usize);
        if spent {
            continue;
        }
        let what = if f.thread_deleted(n) {
            if dead_lettered_as_gone(f, task_id, &wanted) {
                continue;
            }
            "its thread was deleted, yet it was never dead-lettered as thread gone (404)"
        } else if delivered.is_empty() {
            "nothing was ever delivered"
        } else {
            "the last delivery carries an older state"
        };
        v.counts.lost += 1;
        v.push(
            Invariant::Lost,
            Some(task_label(n)),
            Some(judged_at),
            format!("final state `{}` never delivered ({what})", expected.status),
        );
    }
}

/// Whether a launch of one of the final event's `versions` was refused with 404 (as the
/// gateway served it, or as a worker's port saw it: a peer that checks the thread first
/// answers before any launch is served) and the store took that version's thread-gone dead
/// letter.
fn dead_lettered_as_gone(f: &Facts<'_>, task_id: &str, versions: &BTreeSet<u64>) -> bool {
    let refused = f.entries.iter().any(|e| match &e.event {
        Seen::LaunchServed {
            key,
            answer: LaunchAnswer::Gone,
            ..
        }
        | Seen::PortLaunch { key, .. } => {
            let gone = match &e.event {
                Seen::PortLaunch { outcome, .. } => outcome == "gone",
                _ => true,
            };
            gone && parse_key(key)
                .is_some_and(|(t, ver, _)| t == task_id && versions.contains(&ver))
        }
        _ => false,
    });
    let stored = f.entries.iter().any(|e| match &e.event {
        Seen::StoreWrite { rows, .. } => rows.iter().any(|r| {
            r.task_id == task_id
                && r.action == WriteAction::ThreadGone
                && r.outcome.is_ok()
                && r.version.is_some_and(|ver| versions.contains(&ver))
        }),
        _ => false,
    });
    refused && stored
}

/// The latest event version the store reported recording for a task.
fn latest_version(f: &Facts<'_>, task_id: &str) -> Option<u64> {
    f.entries
        .iter()
        .filter_map(|e| match &e.event {
            Seen::StoreInsert {
                task_id: t,
                outcome: Ok(ev),
                ..
            } if t == task_id => Some(*ev),
            Seen::StoreWrite { rows, .. } => rows
                .iter()
                .filter(|r| r.task_id == task_id)
                .filter_map(|r| r.outcome.as_ref().ok().map(|(ev, _, _)| *ev))
                .max(),
            _ => None,
        })
        .max()
}

fn duplicated(f: &Facts<'_>, v: &mut Verdict) {
    let mut by_version: BTreeMap<(&str, u64), Vec<usize>> = BTreeMap::new();
    for r in f.runs.values() {
        if matches!(r.end, Some((_, RunStatus::Success))) {
            by_version
                .entry((r.task_id, r.version))
                .or_default()
                .push(r.created);
        }
    }
    for ((task_id, version), mut created) in by_version {
        if created.len() > 1 {
            created.sort();
            v.counts.duplicated += created.len() as u64 - 1;
            v.push(
                Invariant::Duplicated,
                f.label(task_id),
                Some(created[1]),
                format!(
                    "version {version} delivered by {} successful runs",
                    created.len()
                ),
            );
        }
    }
    let mut runs_of_key: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut first_entry: BTreeMap<&str, usize> = BTreeMap::new();
    for l in &f.launches {
        if let LaunchAnswer::Started { run } = l.answer {
            let runs = runs_of_key.entry(l.key).or_default();
            runs.insert(run);
            if runs.len() == 2 {
                first_entry.insert(l.key, l.entry);
            }
        }
    }
    for r in f.runs.values() {
        if let Some(l) = f.launches.iter().find(|l| l.entry == r.created) {
            runs_of_key.entry(l.key).or_default().insert(r.run);
        }
    }
    for runs in runs_of_key.values_mut() {
        runs.retain(|run| !f.rolled_back.contains(run));
    }
    for (key, runs) in runs_of_key {
        if runs.len() > 1 {
            let (task_id, version, attempt) = parse_key(key).unwrap_or(("", 0, 0));
            v.counts.duplicated += 1;
            let detail = format!(
                "one idempotency key (version {version}, attempt {attempt}) yielded {} runs",
                runs.len()
            );
            v.push(
                Invariant::Duplicated,
                f.label(task_id),
                first_entry.get(key).copied(),
                detail,
            );
        }
    }
}

fn unexpected(f: &Facts<'_>, v: &mut Verdict) {
    let mut max_version: BTreeMap<&str, u64> = BTreeMap::new();
    for (i, e) in f.entries.iter().enumerate() {
        match &e.event {
            Seen::StoreInsert {
                task_id,
                outcome: Ok(ev),
                ..
            } => {
                let m = max_version.entry(task_id).or_default();
                *m = (*m).max(*ev);
            }
            Seen::StoreWrite { rows, .. } => {
                for r in rows {
                    if let Ok((ev, _, _)) = r.outcome {
                        let m = max_version.entry(r.task_id.as_str()).or_default();
                        *m = (*m).max(ev);
                    }
                }
            }
            Seen::StoreRequeue {
                task_id,
                outcome: RequeueOutcome::Requeued(ev),
                ..
            } => {
                let m = max_version.entry(task_id).or_default();
                *m = (*m).max(*ev);
            }
            Seen::LaunchServed { key, .. } => {
                let Some((task_id, version, _)) = parse_key(key) else {
                    v.counts.unexpected += 1;
                    v.push(
                        Invariant::Unexpected,
                        None,
                        Some(i),
                        format!("a run with a malformed key {key:?}"),
                    );
                    continue;
                };
                let known = f.n_of.contains_key(task_id);
                let recorded = max_version.get(task_id).copied().unwrap_or(0);
                if !known || version == 0 || version > recorded {
                    v.counts.unexpected += 1;
                    v.push(Invariant::Unexpected, f.label(task_id), Some(i), format!("a run for version {version}; the store recorded versions up to {recorded}"));
                }
            }
            _ => {}
        }
    }
}

/// Never noisy (DOMAIN §9): no empty event, no run past the budget, no unchanged version.
fn noisy(f: &Facts<'_>, v: &mut Verdict) {
    noisy_launches(f, v);
    unchanged_versions(f, v);
}

/// Launches that should not exist: of an empty event, past the failure budget.
fn noisy_launches(f: &Facts<'_>, v: &mut Verdict) {
    for l in &f.launches {
        if l.shown.as_ref().is_some_and(Shown::is_empty) {
            v.counts.noisy += 1;
            v.push(
                Invariant::Noisy,
                f.label(l.task_id),
                Some(l.entry),
                "a notification with an empty event",
            );
        }
        let last_attempt = last_attempt_allowed(f, l);
        if l.attempt > FAILURE_BUDGET || (l.attempt == FAILURE_BUDGET && !last_attempt) {
            v.push(
                Invariant::Noisy,
                f.label(l.task_id),
                Some(l.entry),
                format!(
                    "attempt {} of one version: more than {FAILURE_BUDGET} counted failures",
                    l.attempt
                ),
            );
        }
        let failed_before = f
            .runs
            .values()
            .filter(|r| {
                r.task_id == l.task_id
                    && r.version == l.version
                    && matches!(r.end, Some((e, s)) if e < l.entry && s != RunStatus::Success)
            })
            .count();
        // A launch that only hands back the key's existing run starts nothing new — also when
        // its answer was lost to a 5xx after the run was found: the engine waits that out and
        // asks again with the same key (DOMAIN §3).
        let reused = match l.answer {
            LaunchAnswer::Started { run } => f
                .runs
                .get(run.as_str())
                .is_some_and(|r| r.created < l.entry),
            _ => false,
        } || key_had_run(f, l.key, l.entry);
        let allowed = FAILURE_BUDGET as usize + usize::from(last_attempt);
        if failed_before >= allowed && !reused {
            v.push(
                Invariant::Noisy,
                f.label(l.task_id),
                Some(l.entry),
                format!(
                    "a launch of version {} after {failed_before} failed runs",
                    l.version
                ),
            );
        }
    }
}

/// Whether launch `l` may be the one last attempt after a spent budget (DOMAIN §3): a run of
/// any task ended `success` after the launch of `l`'s previous attempt (less twice the skew
/// the guard allows, as the engine compares its workers' clocks) and before `l`.
fn last_attempt_allowed(f: &Facts<'_>, l: &Launch<'_>) -> bool {
    let Some(previous) = l.attempt.checked_sub(1) else {
        return false;
    };
    let previous_at = f
        .launches
        .iter()
        .filter(|p| p.task_id == l.task_id && p.version == l.version && p.attempt == previous)
        .filter(|p| p.entry < l.entry)
        .map(|p| f.entries[p.entry].at_us)
        .max();
    let Some(previous_at) = previous_at else {
        return false;
    };
    let slack_us = 2 * MAX_SKEW_MS * 1_000;
    f.runs.values().any(|r| match r.end {
        Some((e, RunStatus::Success)) => e < l.entry && f.entries[e].at_us + slack_us > previous_at,
        _ => false,
    })
}

/// Whether a launch served before history entry `before` created a run for `key`.
fn key_had_run(f: &Facts<'_>, key: &str, before: usize) -> bool {
    f.runs.values().any(|r| {
        r.created < before
            && f.launches
                .iter()
                .any(|x| x.entry == r.created && x.key == key)
    })
}

/// Consecutive delivered versions whose events are the same, with no remote change between —
/// unless an operator's requeue made the later version (it re-sends a dead-lettered event on
/// purpose).
fn unchanged_versions(f: &Facts<'_>, v: &mut Verdict) {
    let requeued: BTreeSet<(&str, u64)> = f
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Seen::StoreRequeue {
                task_id,
                outcome: RequeueOutcome::Requeued(ver),
                ..
            } => Some((task_id.as_str(), *ver)),
            _ => None,
        })
        .collect();
    for (&n, &task_id) in &f.task_ids {
        let Some((remote_id, _)) = f.remote.get(&n) else {
            continue;
        };
        let mut launched: Vec<(u64, &Launch<'_>)> = Vec::new();
        for l in f.launches.iter().filter(|l| l.task_id == task_id) {
            if launched.last().is_none_or(|(v, _)| *v != l.version) {
                launched.push((l.version, l));
            }
        }
        for pair in launched.windows(2) {
            let ((va, a), (vb, b)) = (pair[0], pair[1]);
            let same = a.prompt == b.prompt || Shown::same_but_error_text(a.prompt, b.prompt);
            if !same || vb <= va || requeued.contains(&(task_id, vb)) {
                continue;
            }
            let from = f.recorded_at(task_id, va).unwrap_or(0);
            let to = f.recorded_at(task_id, vb).unwrap_or(b.entry);
            if !changed_between(f, n, remote_id, a, from, to) {
                v.counts.noisy += 1;
                v.push(
                    Invariant::Noisy,
                    Some(task_label(n)),
                    Some(b.entry),
                    format!(
                        "versions {va} and {vb} carry the same event with no change in between"
                    ),
                );
            }
        }
    }
}

/// Whether the remote state seen between history entries `from` and `to` could have changed
/// the event `launch` showed away and back: a served report calling for another event (or none);
/// for an event that is not degraded, enough failed polls for tracking to degrade; for a
/// degraded one, a failed poll of another class than the one it tells (its class is part of the
/// event, its text is not: a served error is of class `server`, an unanswered call a timeout or
/// a connection error).
fn changed_between(
    f: &Facts<'_>,
    n: u32,
    remote_id: &str,
    launch: &Launch<'_>,
    from: usize,
    to: usize,
) -> bool {
    let (mut served, mut unanswered, mut other) = (0, 0, 0);
    for e in &f.entries[from..to.min(f.entries.len())] {
        match &e.event {
            Seen::RemoteServed {
                remote_id: r,
                op: RemoteOp::Status | RemoteOp::Cancel,
                answer,
                ..
            } if r == remote_id => match f.event_of(n, answer) {
                Some(Some(ev)) if notification_prompt(&ev) == launch.prompt => {}
                Some(_) => return true,
                None if matches!(answer, McpAnswer::Unavailable(_)) => served += 1,
                None => other += 1,
            },
            Seen::PortRemote {
                remote_id: r,
                op: RemoteOp::Status,
                answered: false,
                ..
            } if r == remote_id => unanswered += 1,
            _ => {}
        }
    }
    let Some(class) = launch
        .shown
        .as_ref()
        .filter(|s| s.tracking_degraded)
        .map(|s| s.poll_error_class.as_deref().unwrap_or_default())
    else {
        return served + unanswered + other >= tasklatch_core::policy::DEGRADED_AFTER;
    };
    let another_class = if class == "server" {
        unanswered
    } else {
        served + unanswered
    };
    other + another_class > 0
}

/// The status run `r`'s input showed, if it showed an event.
fn shown_status<'r>(r: &'r Run<'_>) -> Option<&'r str> {
    r.shown.as_ref().map(|s| s.status.as_str())
}

fn ordered(f: &Facts<'_>, v: &mut Verdict) {
    for &task_id in f.task_ids.values() {
        let delivered = f.delivered(task_id);
        for pair in delivered.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            if b.version <= a.version {
                v.push(
                    Invariant::Ordered,
                    f.label(task_id),
                    Some(b.created),
                    format!(
                        "version {} delivered after version {}",
                        b.version, a.version
                    ),
                );
            }
        }
        if let Some(first_terminal) = delivered
            .iter()
            .position(|r| r.shown.as_ref().is_some_and(Shown::is_terminal))
        {
            let terminal = shown_status(delivered[first_terminal]);
            for later in &delivered[first_terminal + 1..] {
                if shown_status(later) != terminal {
                    v.push(
                        Invariant::Ordered,
                        f.label(task_id),
                        Some(later.created),
                        "a state delivered after the task's terminal state",
                    );
                }
            }
        }
    }
}

fn frozen(f: &Facts<'_>, v: &mut Verdict) {
    let mut prompts: BTreeMap<(&str, u64), &str> = BTreeMap::new();
    for l in &f.launches {
        match prompts.get(&(l.task_id, l.version)) {
            None => {
                prompts.insert((l.task_id, l.version), l.prompt);
            }
            Some(p) if *p != l.prompt => {
                v.push(
                    Invariant::Ordered,
                    f.label(l.task_id),
                    Some(l.entry),
                    format!(
                        "the frozen snapshot of version {} changed between launches",
                        l.version
                    ),
                );
            }
            Some(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::check::{check, Invariant};
    use crate::history::{Entry, LaunchAnswer, Seen};
    use crate::plan::generate::{generate, Knobs};

    fn entry(event: Seen) -> Entry {
        Entry {
            at_us: 0,
            host: "gateway".into(),
            task: None,
            event,
        }
    }

    fn launch(run: &str) -> Seen {
        Seen::LaunchServed {
            key: "task:t1:1:0".into(),
            owner: "o".into(),
            thread: "th".into(),
            prompt: "p".into(),
            answer: LaunchAnswer::Started { run: run.into() },
            created_run: Some(run.into()),
            dropped: false,
        }
    }

    fn invariants(events: Vec<Seen>) -> Vec<(Invariant, String)> {
        let plan = generate(0, &Knobs::default());
        let entries: Vec<Entry> = events.into_iter().map(entry).collect();
        check(&plan, &entries)
            .violations
            .into_iter()
            .filter(|v| matches!(v.invariant, Invariant::Fenced | Invariant::Duplicated))
            .map(|v| (v.invariant, v.detail))
            .collect()
    }

    #[test]
    fn a_queued_run_is_flagged() {
        let queued = Seen::RunQueued {
            run: "run-1".into(),
            key: "task:t1:1:0".into(),
        };
        let found = invariants(vec![launch("run-1"), queued]);
        assert!(
            found
                .iter()
                .any(|(i, d)| *i == Invariant::Fenced && d.contains("queued")),
            "{found:?}"
        );
        assert!(invariants(vec![launch("run-1")]).is_empty());
    }

    #[test]
    fn a_second_run_of_a_key_is_a_duplicate_unless_rolled_back() {
        let two = invariants(vec![launch("run-1"), launch("run-2")]);
        assert!(
            two.iter().any(|(i, _)| *i == Invariant::Duplicated),
            "{two:?}"
        );
        let rolled = Seen::RunRolledBack {
            run: "run-2".into(),
            key: "task:t1:1:0".into(),
        };
        assert!(invariants(vec![launch("run-1"), launch("run-2"), rolled]).is_empty());
    }
}
