//! Shrinking a failing plan: the smallest plan that fails the same way.
//!
//! First delta debugging removes whole entries — faults, user actions, tasks, workers, script
//! steps — in chunks that halve down to single entries; then each remaining fault is weakened
//! (shorter, rarer, milder) while the failure persists. A candidate counts only if its first
//! violation has the same [`FailureFingerprint`] as the original's: the same invariant and the
//! same kind of story (the violation's text with its numbers and names blanked out).
//!
//! Shrinking is deterministic: candidates are tried in a fixed order, evaluated in fixed
//! batches, and the first failing candidate of a batch (by position) wins; the budget counts
//! runs, not seconds. The same seed always shrinks to the same plan.

mod edits;
mod outcome;

use crate::campaign::{run_plan, BackendFactory};
use crate::check::{Invariant, Violation};
use crate::plan::Plan;
use crate::run::world::RunOptions;
use edits::{
    fewer_workers, step_count, weaker, without_faults, without_steps, without_tasks, without_user,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use tasklatch_core::mutation::Mutant;

/// What makes two failures "the same": the invariant and the shape of the story.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct FailureFingerprint {
    /// The broken invariant.
    pub invariant: Invariant,
    /// The violation's detail with digits blanked.
    pub shape: String,
}

impl FailureFingerprint {
    /// The fingerprint of a violation.
    pub fn of(v: &Violation) -> Self {
        let shape = v
            .detail
            .chars()
            .map(|c| if c.is_ascii_digit() { '#' } else { c })
            .collect::<String>();
        let mut collapsed = String::with_capacity(shape.len());
        for c in shape.chars() {
            if !(c == '#' && collapsed.ends_with('#')) {
                collapsed.push(c);
            }
        }
        FailureFingerprint {
            invariant: v.invariant,
            shape: collapsed,
        }
    }
}

/// How to shrink.
#[derive(Clone)]
pub struct ShrinkOptions {
    /// At most this many simulation runs.
    pub max_runs: usize,
    /// Candidates evaluated at once.
    pub threads: usize,
    /// Tick and liveness bound.
    pub run: RunOptions,
    /// The planted bug the failure needs, if any.
    pub mutant: Option<Mutant>,
}

/// Progress of a shrink.
#[derive(Clone, Copy, Debug, Default)]
pub struct ShrinkProgress {
    /// Runs so far.
    pub runs: usize,
    /// The budget.
    pub max_runs: usize,
    /// Faults in the current smallest failing plan.
    pub faults: usize,
    /// Tasks in it.
    pub tasks: usize,
}

/// A finished shrink.
pub struct ShrinkResult {
    /// The plan shrinking started from.
    pub original: Plan,
    /// The smallest failing plan found.
    pub plan: Plan,
    /// What it fails with.
    pub fingerprint: FailureFingerprint,
    /// Simulation runs used.
    pub runs: usize,
}

struct Shrinker<'a> {
    backends: BackendFactory,
    opts: &'a ShrinkOptions,
    target: FailureFingerprint,
    runs: AtomicUsize,
    progress: &'a (dyn Fn(ShrinkProgress) + Sync),
}

impl Shrinker<'_> {
    fn budget_left(&self) -> bool {
        self.runs.load(Ordering::SeqCst) < self.opts.max_runs
    }

    /// Whether `plan` fails the same way.
    fn fails(&self, plan: &Plan) -> bool {
        if plan.check().is_err() {
            return false;
        }
        self.runs.fetch_add(1, Ordering::SeqCst);
        let Ok(backend) = (self.backends)(self.opts.mutant) else {
            return false;
        };
        let out = run_plan(plan, backend, &self.opts.run, self.opts.mutant);
        out.verdict
            .first()
            .is_some_and(|v| FailureFingerprint::of(v) == self.target)
    }

    /// The first of `candidates` (in order) that fails the same way, evaluating in batches.
    fn first_failing(&self, candidates: Vec<Plan>) -> Option<Plan> {
        let batch = self.opts.threads.max(1);
        for chunk in candidates.chunks(batch) {
            let left = self
                .opts
                .max_runs
                .saturating_sub(self.runs.load(Ordering::SeqCst));
            if left == 0 {
                return None;
            }
            let chunk = &chunk[..chunk.len().min(left)];
            let results = Mutex::new(vec![false; chunk.len()]);
            std::thread::scope(|s| {
                for (i, plan) in chunk.iter().enumerate() {
                    let results = &results;
                    s.spawn(move || {
                        let failed = self.fails(plan);
                        results.lock().unwrap_or_else(|p| p.into_inner())[i] = failed;
                    });
                }
            });
            let results = results.into_inner().unwrap_or_else(|p| p.into_inner());
            if let Some(i) = results.iter().position(|f| *f) {
                return Some(chunk[i].clone());
            }
        }
        None
    }

    fn report(&self, plan: &Plan) {
        (self.progress)(ShrinkProgress {
            runs: self.runs.load(Ordering::SeqCst),
            max_runs: self.opts.max_runs,
            faults: plan.faults.len(),
            tasks: plan.tasks.len(),
        });
    }

    /// Delta debugging over the entries `count(plan)` of one kind, removed by `without`.
    fn remove_chunks(
        &self,
        mut plan: Plan,
        count: fn(&Plan) -> usize,
        without: fn(&Plan, std::ops::Range<usize>) -> Plan,
    ) -> Plan {
        let mut size = count(&plan).div_ceil(2).max(1);
        while size >= 1 && count(&plan) > 0 && self.budget_left() {
            let n = count(&plan);
            let candidates: Vec<Plan> = (0..n)
                .step_by(size)
                .map(|start| without(&plan, start..(start + size).min(n)))
                .collect();
            match self.first_failing(candidates) {
                Some(smaller) => {
                    plan = smaller;
                    self.report(&plan);
                    size = size.min(count(&plan).div_ceil(2).max(1));
                }
                None if size == 1 => break,
                None => size = (size / 2).max(1),
            }
        }
        plan
    }

    /// Weakens one fault at a time while the failure persists.
    fn weaken(&self, mut plan: Plan) -> Plan {
        let mut changed = true;
        while changed && self.budget_left() {
            changed = false;
            for i in 0..plan.faults.len() {
                let candidates = weaker(&plan, i);
                if let Some(w) = self.first_failing(candidates) {
                    plan = w;
                    self.report(&plan);
                    changed = true;
                }
            }
        }
        plan
    }
}

/// Shrinks a failing plan. Errors if the plan does not fail to begin with.
pub fn shrink(
    plan: Plan,
    backends: BackendFactory,
    opts: &ShrinkOptions,
    progress: &(dyn Fn(ShrinkProgress) + Sync),
) -> Result<ShrinkResult, String> {
    let backend = backends(opts.mutant)?;
    let first = run_plan(&plan, backend, &opts.run, opts.mutant);
    let Some(violation) = first.verdict.first() else {
        return Err("the plan passes: there is no failure to shrink".into());
    };
    let s = Shrinker {
        backends,
        opts,
        target: FailureFingerprint::of(violation),
        runs: AtomicUsize::new(1),
        progress,
    };
    s.report(&plan);
    let original = plan.clone();
    let mut current = plan;
    loop {
        let before = current.clone();
        current = s.remove_chunks(current, |p| p.faults.len(), without_faults);
        current = s.remove_chunks(current, |p| p.user.len(), without_user);
        current = s.remove_chunks(current, |p| p.tasks.len(), without_tasks);
        while let Some(fewer) = fewer_workers(&current) {
            match s.first_failing(vec![fewer]) {
                Some(q) => current = q,
                None => break,
            }
        }
        current = s.remove_chunks(current, step_count, without_steps);
        current = s.weaken(current);
        if current == before || !s.budget_left() {
            break;
        }
    }
    Ok(ShrinkResult {
        original,
        plan: current,
        fingerprint: s.target,
        runs: s.runs.load(Ordering::SeqCst),
    })
}
