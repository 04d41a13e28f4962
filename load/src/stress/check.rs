//! The end-of-stress check, from what the doubles recorded — never from the store's own
//! bookkeeping.
//!
//! Inputs: the submitter's record (which local task is which remote task, on which thread), the
//! driver's record (which states it served, when, and each task's final state), the run ledger
//! (every run: key, thread, prompt, final status, creation time) and the threads deleted.
//!
//! Definitions:
//! - **delivered**: distinct (task, version) pairs — the version read from the run's idempotency
//!   key `task:{id}:{version}:{attempt}` — with at least one successful run.
//! - **duplicated**: successful runs beyond the first for one (task, version).
//! - **unexpected**: runs (any outcome) that describe something that never existed: a key that
//!   names no submitted task, a run on another thread than the task's, a prompt with no state
//!   token, or a state token that is not a state the driver served for that task *before* the
//!   run was created.
//! - **lost**: submitted tasks whose final remote state (the token of their terminal stage) is
//!   in no successful run's prompt, unless their thread was deleted.

use crate::doubles::driver::{tokens, RemoteKey, RemoteRecord};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use tasklatch_core::ids::{TaskId, ThreadId};
use tasklatch_core::ledger::RunRecord;
use tasklatch_core::ports::RunStatus;

/// A task the submitter persisted.
#[derive(Clone, Debug)]
pub struct SubmittedTask {
    /// Local id.
    pub task_id: TaskId,
    /// Remote task.
    pub key: RemoteKey,
    /// Its thread.
    pub thread: ThreadId,
}

/// The verdict.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Final states never delivered (threads not deleted).
    pub lost: u64,
    /// Extra successful runs for one (task, version).
    pub duplicated: u64,
    /// Runs for something that never existed.
    pub unexpected: u64,
    /// Distinct (task, version) delivered by a successful run.
    pub delivered: u64,
    /// Tasks exempt from "lost" because their thread was deleted.
    pub exempt: u64,
    /// A few examples of each problem, for the report.
    pub examples: Vec<String>,
}

/// `task:{task_id}:{version}:{attempt}` → (task, version).
fn parse_key(key: &str) -> Option<(TaskId, u64)> {
    let rest = key.strip_prefix("task:")?;
    let mut parts = rest.rsplitn(3, ':');
    let _attempt: u32 = parts.next()?.parse().ok()?;
    let version: u64 = parts.next()?.parse().ok()?;
    let task = parts.next()?;
    Some((TaskId(task.to_owned()), version))
}

/// Examples kept in a verdict, at most.
const MAX_EXAMPLES: usize = 20;

/// Lost tasks named among the examples, at most.
const MAX_LOST_EXAMPLES: usize = 5;

impl Verdict {
    fn example(&mut self, s: String) {
        if self.examples.len() < MAX_EXAMPLES {
            self.examples.push(s);
        }
    }
}

/// The submitted tasks by local id, the remote records by key.
type ByTask<'a> = HashMap<&'a TaskId, &'a SubmittedTask>;
type ByKey<'a> = HashMap<RemoteKey, &'a RemoteRecord>;

/// What a run delivers: the task, its event version, and the state tokens (key, stage) its
/// prompt describes.
struct Described {
    task: TaskId,
    version: u64,
    tokens: Vec<(RemoteKey, u32)>,
}

/// What a run delivers — or, for a run that describes something that never existed, why.
fn describes(
    run: &RunRecord,
    by_task: &ByTask<'_>,
    by_key: &ByKey<'_>,
) -> Result<Described, String> {
    let Some((task, version)) = parse_key(&run.key) else {
        return Err(format!("unexpected: {} has a malformed key", run.run_id));
    };
    let Some(sub) = by_task.get(&task) else {
        return Err(format!(
            "unexpected: {} names unknown task {task}",
            run.run_id
        ));
    };
    if run.thread != sub.thread {
        return Err(format!(
            "unexpected: {} runs on a foreign thread",
            run.run_id
        ));
    }
    let found = tokens(&run.prompt);
    let served = by_key.get(&sub.key);
    let all_served = !found.is_empty()
        && found.iter().all(|(key, stage)| {
            *key == sub.key
                && served
                    .and_then(|r| r.served.get(stage))
                    .is_some_and(|first| *first <= run.created_at)
        });
    if !all_served {
        return Err(format!(
            "unexpected: {} for {task} v{version} describes {found:?}, never served before it",
            run.run_id
        ));
    }
    Ok(Described {
        task,
        version,
        tokens: found,
    })
}

/// The tasks whose final state no successful run delivered (threads not deleted); counts the
/// exempt ones in `exempt`.
fn lost(
    submitted: &[SubmittedTask],
    by_key: &ByKey<'_>,
    delivered_tokens: &HashSet<(RemoteKey, u32)>,
    deleted: &HashSet<ThreadId>,
    exempt: &mut u64,
) -> BTreeSet<TaskId> {
    let mut lost_tasks = BTreeSet::new();
    for sub in submitted {
        if deleted.contains(&sub.thread) {
            *exempt += 1;
            continue;
        }
        let Some(record) = by_key.get(&sub.key) else {
            lost_tasks.insert(sub.task_id.clone());
            continue;
        };
        if !record.terminal || !delivered_tokens.contains(&(sub.key, record.final_stage)) {
            lost_tasks.insert(sub.task_id.clone());
        }
    }
    lost_tasks
}

/// Checks the records (see the module documentation).
pub fn check(
    submitted: &[SubmittedTask],
    remote: &[RemoteRecord],
    runs: &[RunRecord],
    deleted: &HashSet<ThreadId>,
) -> Verdict {
    let mut v = Verdict::default();
    let by_task: ByTask<'_> = submitted.iter().map(|s| (&s.task_id, s)).collect();
    let by_key: ByKey<'_> = remote.iter().map(|r| (r.key, r)).collect();
    let mut successes: BTreeMap<(TaskId, u64), u64> = BTreeMap::new();
    let mut delivered_tokens: HashSet<(RemoteKey, u32)> = HashSet::new();
    for run in runs {
        match describes(run, &by_task, &by_key) {
            Err(why) => {
                v.unexpected += 1;
                v.example(why);
            }
            Ok(d) => {
                if run.status == RunStatus::Success {
                    *successes.entry((d.task, d.version)).or_insert(0) += 1;
                    delivered_tokens.extend(d.tokens);
                }
            }
        }
    }
    for ((task, version), n) in &successes {
        if *n > 1 {
            v.duplicated += n - 1;
            v.example(format!("duplicated: {task} v{version} delivered {n} times"));
        }
    }
    v.delivered = successes.len() as u64;
    let lost_tasks = lost(
        submitted,
        &by_key,
        &delivered_tokens,
        deleted,
        &mut v.exempt,
    );
    v.lost = lost_tasks.len() as u64;
    for t in lost_tasks.iter().take(MAX_LOST_EXAMPLES) {
        v.example(format!("lost: the final state of {t} was never delivered"));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use tasklatch_core::ids::RunId;
    use tasklatch_core::time::Timestamp;

    fn run(id: &str, key: &str, thread: &str, prompt: &str, status: RunStatus) -> RunRecord {
        RunRecord {
            run_id: RunId::from(id),
            key: key.into(),
            owner: "o".into(),
            thread: thread.into(),
            prompt: prompt.into(),
            status,
            created_at: Timestamp::from_micros(100),
            finished_at: None,
        }
    }

    #[test]
    fn verdicts() {
        let k = RemoteKey { n: 1, attempt: 0 };
        let sub = vec![SubmittedTask {
            task_id: "tsk_1".into(),
            key: k,
            thread: "t1".into(),
        }];
        let rec = vec![RemoteRecord {
            key: k,
            served: [
                (0, Timestamp::from_micros(10)),
                (1, Timestamp::from_micros(10)),
            ]
            .into_iter()
            .collect(),
            final_stage: 1,
            terminal: true,
        }];
        let ok = run(
            "run-1",
            "task:tsk_1:1:0",
            "t1",
            "x st-1.0-1 y",
            RunStatus::Success,
        );
        let none = HashSet::new();
        let v = check(&sub, &rec, std::slice::from_ref(&ok), &none);
        assert_eq!(
            (v.lost, v.duplicated, v.unexpected, v.delivered),
            (0, 0, 0, 1)
        );
        let dup = run(
            "run-2",
            "task:tsk_1:1:1",
            "t1",
            "st-1.0-1",
            RunStatus::Success,
        );
        let v = check(&sub, &rec, &[ok.clone(), dup], &none);
        assert_eq!(v.duplicated, 1);
        let ghost = run(
            "run-3",
            "task:tsk_1:2:0",
            "t1",
            "st-1.0-7",
            RunStatus::Error,
        );
        assert_eq!(check(&sub, &rec, &[ok.clone(), ghost], &none).unexpected, 1);
        let early = run(
            "run-4",
            "task:tsk_1:1:0",
            "t1",
            "st-1.0-0",
            RunStatus::Success,
        );
        let v = check(&sub, &rec, &[early], &none);
        assert_eq!((v.lost, v.unexpected), (1, 0));
        let deleted: HashSet<ThreadId> = [ThreadId::from("t1")].into_iter().collect();
        assert_eq!(check(&sub, &rec, &[], &deleted).lost, 0);
        assert_eq!(parse_key("task:tsk_1:12:3"), Some(("tsk_1".into(), 12)));
        assert_eq!(parse_key("nope"), None);
    }
}
