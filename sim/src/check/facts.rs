//! Indexes over a history: who each task is, what the remote served, which runs were launched
//! and how they ended. Built once; every invariant check reads from here.

use super::shown::Shown;
use crate::history::{parse_key, Entry, LaunchAnswer, RemoteOp, Seen};
use crate::plan::naming::{owner_name, task_label, task_name, thread_name};
use crate::plan::Plan;
use crate::wire::mcp::McpAnswer;
use std::collections::{BTreeMap, BTreeSet};
use tasklatch_core::event::Event as TaskEvent;
use tasklatch_core::ports::RunStatus;
use tasklatch_core::secret::{RemoteHandle, Secret};
use tasklatch_core::snapshot::{validate, ProtocolError};
use tasklatch_core::task::{Identity, RemoteState};
use tasklatch_core::time::Timestamp;

/// A launch the gateway served.
pub struct Launch<'a> {
    /// History index.
    pub entry: usize,
    /// Task id from the key.
    pub task_id: &'a str,
    /// Version from the key.
    pub version: u64,
    /// Attempt from the key.
    pub attempt: u32,
    /// Idempotency key.
    pub key: &'a str,
    /// The hidden input.
    pub prompt: &'a str,
    /// The event the hidden input shows, read once (`None` when it holds none).
    pub shown: Option<Shown>,
    /// The gateway's answer.
    pub answer: &'a LaunchAnswer,
}

/// A run the gateway created.
pub struct Run<'a> {
    /// Run id.
    pub run: &'a str,
    /// Task id from its key.
    pub task_id: &'a str,
    /// Version from its key.
    pub version: u64,
    /// History index of the launch that created it.
    pub created: usize,
    /// The hidden input it carried.
    pub prompt: &'a str,
    /// The event that input shows, read once (`None` when it holds none).
    pub shown: Option<Shown>,
    /// How it ended (history index, status).
    pub end: Option<(usize, RunStatus)>,
}

/// Everything the checks need, indexed.
pub struct Facts<'a> {
    /// The plan.
    pub plan: &'a Plan,
    /// The history.
    pub entries: &'a [Entry],
    /// Task number → task id.
    pub task_ids: BTreeMap<u32, &'a str>,
    /// Task id → task number.
    pub n_of: BTreeMap<&'a str, u32>,
    /// Task number → (remote id, driver data).
    pub remote: BTreeMap<u32, (&'a str, &'a str)>,
    /// Remote id → the number of the task it was created for.
    pub n_of_remote: BTreeMap<&'a str, u32>,
    /// Remote id → every task whose submit was answered with it: its creator, then the tasks
    /// the duplicate-handle quirk handed it to again. The row that holds it is one of them.
    pub holders: BTreeMap<&'a str, Vec<u32>>,
    /// Task number → the remote id its submit was answered with (created or handed again).
    pub held: BTreeMap<u32, &'a str>,
    /// Task ids the store accepted.
    pub inserted: BTreeSet<&'a str>,
    /// Launches, in history order.
    pub launches: Vec<Launch<'a>>,
    /// Runs by id.
    pub runs: BTreeMap<&'a str, Run<'a>>,
    /// Deleted threads (owner, thread).
    pub deleted_threads: BTreeSet<(&'a str, &'a str)>,
    /// The remote handles' secrets the remote server handed out (remote ids, driver data).
    pub secrets: Vec<&'a str>,
    /// The users' answers (secret-like too).
    pub answers: Vec<&'a str>,
    /// Runs the gateway rolled back while they were pending or running (`langgraph` mode):
    /// deleted before they could deliver anything.
    pub rolled_back: BTreeSet<&'a str>,
    /// Runs the gateway queued behind an active run of their thread (history index, run).
    pub queued: Vec<(usize, &'a str, &'a str)>,
}

impl<'a> Facts<'a> {
    /// Indexes `entries` of a run of `plan`.
    pub fn build(plan: &'a Plan, entries: &'a [Entry]) -> Self {
        let mut f = Facts {
            plan,
            entries,
            task_ids: BTreeMap::new(),
            n_of: BTreeMap::new(),
            remote: BTreeMap::new(),
            n_of_remote: BTreeMap::new(),
            holders: BTreeMap::new(),
            held: BTreeMap::new(),
            inserted: BTreeSet::new(),
            launches: Vec::new(),
            runs: BTreeMap::new(),
            deleted_threads: BTreeSet::new(),
            secrets: Vec::new(),
            answers: Vec::new(),
            rolled_back: BTreeSet::new(),
            queued: Vec::new(),
        };
        for (i, e) in entries.iter().enumerate() {
            f.index(i, &e.event);
        }
        f
    }

    /// Indexes history entry `i`.
    fn index(&mut self, i: usize, event: &'a Seen) {
        let f = self;
        match event {
            Seen::SubmitSent { n, task_id } => {
                f.task_ids.insert(*n, task_id);
                f.n_of.insert(task_id, *n);
            }
            Seen::RemoteCreated {
                n,
                remote_id,
                driver_data,
            } => {
                f.remote.insert(*n, (remote_id, driver_data));
                f.n_of_remote.insert(remote_id, *n);
                f.holders.entry(remote_id).or_default().push(*n);
                f.held.insert(*n, remote_id);
                f.secrets.push(remote_id);
                f.secrets.push(driver_data);
            }
            Seen::RemoteReused { n, remote_id } => {
                f.holders.entry(remote_id).or_default().push(*n);
                f.held.insert(*n, remote_id);
            }
            Seen::StoreInsert {
                task_id,
                outcome: Ok(_),
                ..
            } => {
                f.inserted.insert(task_id);
            }
            Seen::LaunchServed {
                key,
                prompt,
                answer,
                created_run,
                ..
            } => f.launched(i, key, prompt, answer, created_run.as_deref()),
            Seen::RunEnded { run, status, .. } => {
                if let Some(r) = f.runs.get_mut(run.as_str()) {
                    r.end = Some((i, *status));
                }
            }
            Seen::ThreadDeleted { owner, thread } => {
                f.deleted_threads.insert((owner, thread));
            }
            Seen::AnswerSent { text, .. } => f.answers.push(text),
            Seen::RunRolledBack { run, .. } => {
                f.rolled_back.insert(run);
            }
            Seen::RunQueued { run, key } => f.queued.push((i, run, key)),
            _ => {}
        }
    }

    /// Launch entry `i`: a launch of a well-formed key, and the run it created, if any.
    fn launched(
        &mut self,
        i: usize,
        key: &'a str,
        prompt: &'a str,
        answer: &'a LaunchAnswer,
        created_run: Option<&'a str>,
    ) {
        let Some((task_id, version, attempt)) = parse_key(key) else {
            return;
        };
        let shown = Shown::of(prompt);
        if let Some(run) = created_run {
            let created = Run {
                run,
                task_id,
                version,
                created: i,
                prompt,
                shown: shown.clone(),
                end: None,
            };
            self.runs.insert(run, created);
        }
        self.launches.push(Launch {
            entry: i,
            task_id,
            version,
            attempt,
            key,
            prompt,
            shown,
            answer,
        });
    }

    /// The history index of the store's definitive refusal of task `task_id`'s row (an
    /// `invalid input` answer whose reply was not dropped), if there was one.
    pub fn refused_for_good(&self, task_id: &str) -> Option<usize> {
        self.entries.iter().position(|e| {
            matches!(&e.event, Seen::StoreInsert {
                task_id: t,
                outcome: Err(why),
                dropped: false,
            } if t == task_id && why.starts_with("invalid input"))
        })
    }

    /// The ids of the tasks whose submits were answered with `remote_id` (see [`Self::holders`]).
    pub fn holder_ids(&self, remote_id: &str) -> impl Iterator<Item = &'a str> + '_ {
        self.holders
            .get(remote_id)
            .into_iter()
            .flatten()
            .filter_map(|n| self.task_ids.get(n).copied())
    }

    /// Whether remote task `remote_id` is held by exactly one stored task (the duplicate-handle
    /// quirk hands one remote task to several submits; their rows' work interleaves).
    pub fn held_alone(&self, remote_id: &str) -> bool {
        self.holders.get(remote_id).map_or(0, Vec::len) == 1
    }

    /// `task-{n}` of a task id.
    pub fn label(&self, task_id: &str) -> Option<String> {
        self.n_of.get(task_id).map(|n| task_label(*n))
    }

    /// The remote handle of task `n`, as the remote server created it.
    pub fn handle(&self, n: u32) -> Option<RemoteHandle> {
        self.remote.get(&n).map(|(r, d)| RemoteHandle {
            remote_task_id: Secret::new(*r),
            driver_data: Secret::new(*d),
        })
    }

    /// The identity the engine gave task `n` (what events are built from).
    pub fn identity(&self, n: u32) -> Option<Identity> {
        let task = self.plan.task(n)?;
        Some(Identity {
            task_id: (*self.task_ids.get(&n)?).into(),
            owner: owner_name(task.owner).into(),
            thread: thread_name(task.owner, task.thread).into(),
            server: "mcp".into(),
            name: task_name(task),
            handle: self.handle(n)?,
            created_at: Timestamp::EPOCH,
        })
    }

    /// The event a served answer calls for (`Some(None)`: nothing worth saying), or `None` for
    /// a transient error, which is not a report.
    pub fn event_of(&self, n: u32, answer: &McpAnswer) -> Option<Option<TaskEvent>> {
        let handle = self.handle(n)?;
        let identity = self.identity(n)?;
        let observed = match answer {
            McpAnswer::Report(w) | McpAnswer::Created { report: w, .. } => {
                validate(&w.decode(), &handle).unwrap_or_else(ProtocolError::into_observed)
            }
            McpAnswer::Unknown => ProtocolError::UnknownTask.into_observed(),
            McpAnswer::Unavailable(_) | McpAnswer::Rejected(_) | McpAnswer::AnswerTaken => {
                return None
            }
        };
        let state = RemoteState::submitted(Timestamp::EPOCH).observe(&observed, Timestamp::EPOCH);
        Some(TaskEvent::build(&identity, &state, None))
    }

    /// The event task `n` ends on (`None` when nothing is worth saying), with the history
    /// index it is judged at: the remote server's truth recorded when the run ended (what a
    /// fault-free poll would answer then), whatever the engine polled; in a history without
    /// that record, the last report the server served (transient errors are not reports).
    pub fn expected_event(&self, n: u32) -> Option<(Option<TaskEvent>, usize)> {
        let (remote_id, _) = self.remote.get(&n)?;
        let truth = self
            .entries
            .iter()
            .enumerate()
            .find_map(|(i, e)| match &e.event {
                Seen::RemoteTruth {
                    remote_id: r,
                    answer,
                    ..
                } if r == remote_id => self.event_of(n, answer).map(|ev| (ev, i)),
                _ => None,
            });
        if truth.is_some() {
            return truth;
        }
        self.entries
            .iter()
            .enumerate()
            .rev()
            .find_map(|(i, e)| match &e.event {
                Seen::RemoteServed {
                    remote_id: r,
                    answer,
                    ..
                } if r == remote_id => self.event_of(n, answer).map(|ev| (ev, i)),
                _ => None,
            })
    }

    /// For a task a restart of the server forgot: the event of the last report the server
    /// served before, if it is terminal (an engine that got it stopped polling and settled on
    /// it).
    pub fn served_before_forgotten(&self, n: u32) -> Option<TaskEvent> {
        let (remote_id, _) = self.remote.get(&n)?;
        let forgotten_at = self.entries.iter().position(|e| match &e.event {
            Seen::RemoteTruth {
                remote_id: r,
                forgotten,
                ..
            } => *forgotten && r == remote_id,
            _ => false,
        })?;
        let last = self.entries[..forgotten_at]
            .iter()
            .rev()
            .find_map(|e| match &e.event {
                Seen::RemoteServed {
                    remote_id: r,
                    answer,
                    ..
                } if r == remote_id && !matches!(answer, McpAnswer::Unknown) => {
                    self.event_of(n, answer)
                }
                _ => None,
            })??;
        last.status.is_terminal().then_some(last)
    }

    /// History index at which the store first reported `version` (or a later one) for a task.
    pub fn recorded_at(&self, task_id: &str, version: u64) -> Option<usize> {
        self.entries.iter().position(|e| match &e.event {
            Seen::StoreInsert {
                task_id: t,
                outcome: Ok(ev),
                ..
            } => t == task_id && *ev >= version,
            Seen::StoreWrite { rows, .. } => rows.iter().any(|r| {
                r.task_id == task_id && r.outcome.as_ref().is_ok_and(|(ev, _, _)| *ev >= version)
            }),
            _ => false,
        })
    }

    /// Successful runs of a task, in launch order.
    pub fn delivered(&self, task_id: &str) -> Vec<&Run<'a>> {
        let mut runs: Vec<&Run<'a>> = self
            .runs
            .values()
            .filter(|r| r.task_id == task_id && matches!(r.end, Some((_, RunStatus::Success))))
            .collect();
        runs.sort_by_key(|r| r.created);
        runs
    }

    /// Whether task `n`'s thread was deleted.
    pub fn thread_deleted(&self, n: u32) -> bool {
        self.plan.task(n).is_some_and(|t| {
            self.deleted_threads.contains(&(
                owner_name(t.owner).as_str(),
                thread_name(t.owner, t.thread).as_str(),
            ))
        })
    }

    /// Remote operations of a kind served for a remote id (history index, answer).
    pub fn served(
        &self,
        remote_id: &str,
        op: RemoteOp,
    ) -> impl Iterator<Item = (usize, &'a McpAnswer)> + '_ {
        let remote_id = remote_id.to_owned();
        self.entries
            .iter()
            .enumerate()
            .filter_map(move |(i, e)| match &e.event {
                Seen::RemoteServed {
                    remote_id: r,
                    op: o,
                    answer,
                    ..
                } if *r == remote_id && *o == op => Some((i, answer)),
                _ => None,
            })
    }
}
