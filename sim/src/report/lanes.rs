//! Which lanes the timeline has, in which order, and which lanes an entry belongs to.
//!
//! Host lanes come first — `db`, `mcp`, `gateway`, every `worker-N`, `user` — then one lane
//! per task (`task-{n}`) in task-number order. Entries name their task only when the recording
//! host knew it; batched store calls (claims, writes) name task *ids*, which are mapped back to
//! `task-{n}` through the history's own `submit_sent`, `store_insert` and `remote_created` lines.

use crate::check::Verdict;
use crate::history::{Entry, Seen};
use crate::plan::naming::{task_label, task_number, worker_host, worker_number};
use crate::plan::Plan;
use std::collections::{BTreeMap, BTreeSet};

/// Most task lanes drawn; tasks named by a violation are always drawn, the rest in order.
pub const MAX_TASK_LANES: usize = 400;

/// The timeline's lanes.
pub struct Lanes {
    /// Lane names in display order: hosts, then tasks.
    names: Vec<String>,
    /// How many of `names` are host lanes.
    hosts: usize,
    /// Lane name → row.
    rows: BTreeMap<String, usize>,
    /// Task id or remote id → task label.
    ids: BTreeMap<String, String>,
    /// Tasks known but not drawn (over [`MAX_TASK_LANES`]).
    pub omitted_tasks: usize,
}

impl Lanes {
    /// The lanes of a run of `plan` that recorded `entries`.
    pub fn build(plan: &Plan, entries: &[Entry], verdict: &Verdict) -> Lanes {
        let mut workers: BTreeSet<u32> = (0..plan.workers).collect();
        let mut tasks: BTreeSet<(u64, String)> = plan
            .tasks
            .iter()
            .map(|t| task_key(&task_label(t.n)))
            .collect();
        let mut ids = BTreeMap::new();
        for e in entries {
            if let Some(w) = worker_number(&e.host) {
                workers.insert(w);
            }
            if let Some(t) = &e.task {
                tasks.insert(task_key(t));
            }
            match &e.event {
                Seen::SubmitSent { n, task_id } => {
                    ids.insert(task_id.clone(), task_label(*n));
                }
                Seen::RemoteCreated { n, remote_id, .. } => {
                    ids.insert(remote_id.clone(), task_label(*n));
                }
                Seen::StoreInsert { task_id, .. } => {
                    if let Some(t) = &e.task {
                        ids.entry(task_id.clone()).or_insert_with(|| t.clone());
                    }
                }
                _ => {}
            }
        }
        let mut names: Vec<String> = vec!["db".into(), "mcp".into(), "gateway".into()];
        names.extend(workers.iter().map(|w| worker_host(*w)));
        names.push("user".into());
        let hosts = names.len();

        let wanted: BTreeSet<(u64, String)> = verdict
            .violations
            .iter()
            .filter_map(|v| v.task.as_deref())
            .map(task_key)
            .collect();
        let total = tasks.len();
        let mut drawn: BTreeSet<(u64, String)> = wanted.intersection(&tasks).cloned().collect();
        for t in &tasks {
            if drawn.len() >= MAX_TASK_LANES {
                break;
            }
            drawn.insert(t.clone());
        }
        names.extend(drawn.iter().map(|(_, name)| name.clone()));
        let rows = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), i))
            .collect();
        Lanes {
            omitted_tasks: total - drawn.len(),
            names,
            hosts,
            rows,
            ids,
        }
    }

    /// Lane names in display order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// How many host lanes there are (they are rows `0..host_count()`).
    pub fn host_count(&self) -> usize {
        self.hosts
    }

    /// Whether `row` is a host lane (else a task lane).
    pub fn is_host(&self, row: usize) -> bool {
        row < self.hosts
    }

    /// The row of the lane called `name`.
    pub fn row(&self, name: &str) -> Option<usize> {
        self.rows.get(name).copied()
    }

    /// The task label (`task-{n}`) of a task id or remote id.
    pub fn task_of_id(&self, id: &str) -> Option<&str> {
        self.ids.get(id).map(String::as_str)
    }

    /// Every task an entry is about: its own task, and the tasks of the rows of a batched
    /// store call.
    pub fn tasks_of<'a>(&'a self, e: &'a Entry) -> BTreeSet<&'a str> {
        let mut out = BTreeSet::new();
        if let Some(t) = &e.task {
            out.insert(t.as_str());
        }
        match &e.event {
            Seen::StoreClaim { grants, .. } => {
                out.extend(grants.iter().filter_map(|g| self.task_of_id(&g.task_id)))
            }
            Seen::StoreWrite { rows, .. } => {
                out.extend(rows.iter().filter_map(|r| self.task_of_id(&r.task_id)))
            }
            _ => {}
        }
        out
    }

    /// Whether a task id belongs to the task labelled `label`.
    pub fn id_is(&self, id: &str, label: &str) -> bool {
        self.task_of_id(id) == Some(label)
    }
}

/// Sort key of a task label: its number first (so `task-10` follows `task-9`), then its text.
fn task_key(label: &str) -> (u64, String) {
    let n = task_number(label).unwrap_or(u64::MAX);
    (n, label.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_lanes_follow_numeric_order() {
        let mut keys = vec![task_key("task-10"), task_key("task-9"), task_key("odd")];
        keys.sort();
        let names: Vec<_> = keys.into_iter().map(|(_, n)| n).collect();
        assert_eq!(names, ["task-9", "task-10", "odd"]);
    }
}
