//! The state of a simulated LangGraph Agent Server (the `gateway` host in `langgraph` mode),
//! as `../shared/PEERS.md` measured the real one:
//!
//! - threads are created and deleted; deleting a thread makes its runs disappear;
//! - a create carries the key only in the run's metadata: **no idempotency**, two creates with
//!   one key make two runs;
//! - a create with the `reject` strategy on a thread with a pending or running run answers 409;
//!   without it the run is **queued** (200) and starts when the thread is free;
//! - a missing or deleted thread answers 404 — the same 404 a missing assistant gets;
//! - runs are listed per thread newest first (creation time, then id), in pages;
//! - a rollback cancel of a pending or running run deletes it.
//!
//! Pure bookkeeping: the host decides when runs end and records what it served.

use std::collections::BTreeMap;
use tasklatch_core::ids::{OwnerId, RunId, ThreadId};
use tasklatch_core::ports::RunStatus;

/// The one assistant the simulated server has.
pub const ASSISTANT: &str = "agent";

/// A run as the server keeps it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ServerRun {
    /// Its id (`run-{seq:06}`: sorts like its sequence).
    pub run: RunId,
    /// Its thread.
    pub thread: ThreadId,
    /// The key from its metadata.
    pub key: String,
    /// Creation time (simulated ms) and sequence: the server's order.
    pub order: (u64, u64),
    /// Where it is.
    pub status: RunStatus,
    /// Created behind a busy thread (no `reject` strategy).
    pub queued: bool,
}

/// What a create answered.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Created {
    /// 200: a new run (queued behind an active one if `queued`).
    Run {
        /// The run.
        run: RunId,
        /// Whether it waits behind an active run.
        queued: bool,
    },
    /// 409: the thread has an active run and the strategy is `reject`.
    Busy,
    /// 404: thread (or assistant) not found.
    NotFound,
}

/// One run of a list answer: its order (creation ms, sequence), id and key.
pub type Listed = ((u64, u64), RunId, String);

/// The simulated server's threads and runs.
#[derive(Default)]
pub struct AgentServer {
    threads: BTreeMap<ThreadId, (OwnerId, bool)>,
    runs: Vec<ServerRun>,
    seq: u64,
}

impl AgentServer {
    /// Creates `thread` for `owner` (a no-op if it exists; deletion is final, as in the ledger).
    pub fn create_thread(&mut self, owner: &OwnerId, thread: &ThreadId) {
        self.threads
            .entry(thread.clone())
            .or_insert((owner.clone(), false));
    }

    /// Deletes `thread` and its runs; returns the runs that disappeared while active.
    pub fn delete_thread(&mut self, thread: &ThreadId) -> Vec<RunId> {
        if let Some((_, deleted)) = self.threads.get_mut(thread) {
            *deleted = true;
        }
        let gone = self
            .runs
            .iter()
            .filter(|r| &r.thread == thread && r.status.is_active())
            .map(|r| r.run.clone())
            .collect();
        self.runs.retain(|r| &r.thread != thread);
        gone
    }

    fn live(&self, thread: &ThreadId) -> bool {
        matches!(self.threads.get(thread), Some((_, false)))
    }

    /// `POST /threads/{thread}/runs` at `now_ms`: `reject` is the `multitask_strategy`.
    pub fn create_run(
        &mut self,
        thread: &ThreadId,
        key: &str,
        reject: bool,
        now_ms: u64,
    ) -> Created {
        if !self.live(thread) {
            return Created::NotFound;
        }
        let busy = self
            .runs
            .iter()
            .any(|r| &r.thread == thread && r.status.is_active());
        if busy && reject {
            return Created::Busy;
        }
        self.seq += 1;
        let run = RunId(format!("run-{:06}", self.seq));
        self.runs.push(ServerRun {
            run: run.clone(),
            thread: thread.clone(),
            key: key.to_owned(),
            order: (now_ms, self.seq),
            status: if busy {
                RunStatus::Pending
            } else {
                RunStatus::Running
            },
            queued: busy,
        });
        Created::Run { run, queued: busy }
    }

    /// `GET /threads/{thread}/runs?limit&offset`: (order, run id, key), newest first; `None`
    /// for a missing or deleted thread (404).
    pub fn list_runs(&self, thread: &ThreadId, limit: u32, offset: u32) -> Option<Vec<Listed>> {
        if !self.live(thread) {
            return None;
        }
        let mut runs: Vec<&ServerRun> = self.runs.iter().filter(|r| &r.thread == thread).collect();
        runs.sort_by_key(|r| std::cmp::Reverse(r.order));
        Some(
            runs.into_iter()
                .skip(offset as usize)
                .take(limit as usize)
                .map(|r| (r.order, r.run.clone(), r.key.clone()))
                .collect(),
        )
    }

    /// `GET /threads/{thread}/runs/{run}`: the status, `Missing` when deleted or unknown.
    pub fn status(&self, run: &RunId) -> RunStatus {
        self.find(run).map_or(RunStatus::Missing, |r| r.status)
    }

    /// The run, if the server still has it.
    pub fn find(&self, run: &RunId) -> Option<&ServerRun> {
        self.runs.iter().find(|r| &r.run == run)
    }

    /// Whether a pending run still waits: an older run of its thread is active.
    pub fn blocked(&self, run: &ServerRun) -> bool {
        self.runs
            .iter()
            .any(|r| r.thread == run.thread && r.order < run.order && r.status.is_active())
    }

    /// A queued run starts (its predecessor ended).
    pub fn start(&mut self, run: &RunId) {
        if let Some(r) = self.runs.iter_mut().find(|r| &r.run == run) {
            if r.status == RunStatus::Pending {
                r.status = RunStatus::Running;
            }
        }
    }

    /// Ends an active run; false if it is gone or already ended.
    pub fn finish(&mut self, run: &RunId, status: RunStatus) -> bool {
        match self.runs.iter_mut().find(|r| &r.run == run) {
            Some(r) if r.status.is_active() => {
                r.status = status;
                true
            }
            _ => false,
        }
    }

    /// `POST /threads/{thread}/runs/{run}/cancel?action=rollback`: deletes a pending or running
    /// run of `thread`. `Some(true)` rolled back, `Some(false)` the run had already ended (it
    /// stays), `None` no such run on that thread (404).
    pub fn rollback(&mut self, thread: &ThreadId, run: &RunId) -> Option<bool> {
        let i = self
            .runs
            .iter()
            .position(|r| &r.run == run && &r.thread == thread)?;
        if !self.runs[i].status.is_active() {
            return Some(false);
        }
        self.runs.remove(i);
        Some(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> ThreadId {
        ThreadId(s.into())
    }

    #[test]
    fn no_idempotency_409_or_queue_404_and_newest_first() {
        let mut s = AgentServer::default();
        s.create_thread(&OwnerId("o".into()), &t("a"));
        assert_eq!(s.create_run(&t("b"), "k", true, 0), Created::NotFound);
        let Created::Run {
            run: r1,
            queued: false,
        } = s.create_run(&t("a"), "k", true, 1)
        else {
            panic!("first create");
        };
        assert_eq!(s.create_run(&t("a"), "k", true, 2), Created::Busy);
        let Created::Run {
            run: r2,
            queued: true,
        } = s.create_run(&t("a"), "k2", false, 3)
        else {
            panic!("queued create");
        };
        assert_eq!(s.status(&r2), RunStatus::Pending);
        assert!(s.finish(&r1, RunStatus::Success));
        s.start(&r2);
        assert!(s.finish(&r2, RunStatus::Success));
        let Created::Run { run: r3, .. } = s.create_run(&t("a"), "k", true, 4) else {
            panic!("same key again");
        };
        let listed: Vec<RunId> = s
            .list_runs(&t("a"), 2, 0)
            .unwrap_or_default()
            .into_iter()
            .map(|(_, r, _)| r)
            .collect();
        assert_eq!(listed, vec![r3.clone(), r2.clone()]);
        assert_eq!(s.list_runs(&t("a"), 2, 2).map(|p| p.len()), Some(1));
        assert_eq!(s.rollback(&t("a"), &r1), Some(false));
        assert_eq!(s.rollback(&t("a"), &r3), Some(true));
        assert_eq!(s.status(&r3), RunStatus::Missing);
        assert_eq!(s.rollback(&t("a"), &r3), None);
        s.delete_thread(&t("a"));
        assert_eq!(s.list_runs(&t("a"), 2, 0), None);
        assert_eq!(s.status(&r1), RunStatus::Missing);
    }
}
