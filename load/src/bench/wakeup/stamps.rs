//! When each task was submitted and when its run started: the launcher wrapper that notes the
//! start, and the samples it yields.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tasklatch_core::ids::{RunId, ThreadId};
use tasklatch_core::ports::{LaunchOutcome, Launcher, RunRequest, RunStatus};

/// A task's submit instant and its first run's start, as far as known.
type Pair = (Option<Instant>, Option<Instant>);

/// Submit and run-start instants per task id (shared by the submitter and the lanes).
#[derive(Clone, Default)]
pub struct Stamps {
    inner: Arc<Mutex<BTreeMap<String, Pair>>>,
}

impl Stamps {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Pair>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Task `task` is about to be submitted (its stamp is taken before the write).
    pub fn submitting(&self, task: &str, at: Instant) {
        self.lock().entry(task.to_owned()).or_default().0 = Some(at);
    }

    /// The first run of task `task` started at `at` (later starts are ignored).
    pub fn started(&self, task: &str, at: Instant) {
        let mut map = self.lock();
        let entry = map.entry(task.to_owned()).or_default();
        entry.1.get_or_insert(at);
    }

    /// Tasks whose run started.
    pub fn started_count(&self) -> usize {
        self.lock().values().filter(|(_, s)| s.is_some()).count()
    }

    /// Submit → run start of every task that has both; a start noted before its submit stamp
    /// (the stamp is taken before the write, so this cannot happen) counts as zero.
    pub fn latencies(&self) -> Vec<Duration> {
        self.lock()
            .values()
            .filter_map(|(sub, start)| Some(start.as_ref()?.saturating_duration_since((*sub)?)))
            .collect()
    }
}

/// The task id inside a run key `task:{task_id}:{version}:{attempt}`.
fn task_of(key: &str) -> Option<&str> {
    let rest = key.strip_prefix("task:")?;
    let (rest, _attempt) = rest.rsplit_once(':')?;
    let (task, _version) = rest.rsplit_once(':')?;
    Some(task)
}

/// A launcher that notes when each task's run was accepted.
pub struct Timed<L> {
    /// The real launcher.
    pub inner: L,
    /// Where the starts are noted.
    pub stamps: Stamps,
}

impl<L: Launcher> Launcher for Timed<L> {
    async fn start_run(&self, req: RunRequest) -> LaunchOutcome {
        let task = task_of(&req.key).map(str::to_owned);
        let outcome = self.inner.start_run(req).await;
        if let (LaunchOutcome::Started(_), Some(task)) = (&outcome, task) {
            self.stamps.started(&task, Instant::now());
        }
        outcome
    }

    async fn run_status(&self, thread: &ThreadId, run: &RunId) -> Result<RunStatus, String> {
        self.inner.run_status(thread, run).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_task_id_is_read_from_the_run_key() {
        assert_eq!(task_of("task:tsk_a:b:3:1"), Some("tsk_a:b"));
        assert_eq!(task_of("task:t:1:0"), Some("t"));
        assert_eq!(task_of("run:t:1:0"), None);
        assert_eq!(task_of("task:t"), None);
    }

    #[test]
    fn a_latency_needs_both_stamps_and_keeps_the_first_start() {
        let s = Stamps::default();
        let t0 = Instant::now();
        s.submitting("a", t0);
        s.started("a", t0 + Duration::from_millis(5));
        s.started("a", t0 + Duration::from_millis(9));
        s.submitting("b", t0);
        assert_eq!(s.latencies(), [Duration::from_millis(5)]);
        assert_eq!(s.started_count(), 1);
    }
}
