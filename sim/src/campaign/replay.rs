//! Replaying one run for a person: the files a replay writes (trace, HTML report), the lines
//! it prints, and the check that a recorded trace reproduces.

use crate::campaign::{run_plan, BackendFactory};
use crate::plan::Plan;
use crate::run::world::{RunOptions, RunOutcome};
use std::path::Path;
use tasklatch_core::mutation::Mutant;

/// Writes the run's history as a trace file; returns the line that says so.
pub fn write_trace(path: &Path, out: &RunOutcome) -> Result<String, String> {
    crate::campaign::trace::write(path, &out.entries)
        .map_err(|e| format!("cannot write trace {}: {e}", path.display()))?;
    Ok(format!(
        "trace: {} ({} events)",
        path.display(),
        out.entries.len()
    ))
}

/// Writes the run's timeline report; returns the line that says so.
pub fn write_report(path: &Path, plan: &Plan, out: &RunOutcome) -> Result<String, String> {
    let html = crate::report::render(plan, &out.entries, &out.verdict, &out.hash);
    std::fs::write(path, html)
        .map_err(|e| format!("cannot write report {}: {e}", path.display()))?;
    Ok(format!("report: {}", path.display()))
}

/// What a replay prints after its files: the run, the checker's counts, every violation,
/// the verdict and, last, the history hash.
pub fn outcome_lines(plan: &Plan, out: &RunOutcome) -> Vec<String> {
    let c = &out.verdict.counts;
    let mut lines = vec![
        format!(
            "seed {}: {} workers, {} tasks, {} faults; {:.0} simulated seconds in {:.2} s",
            plan.seed,
            plan.workers,
            plan.tasks.len(),
            plan.faults.len(),
            out.sim_elapsed.as_secs_f64(),
            out.wall.as_secs_f64()
        ),
        format!(
            "delivered={} lost={} duplicated={} unexpected={} noisy={} fenced_refused={} dead_letters: thread_gone={} budget={} cancel={}",
            c.delivered, c.lost, c.duplicated, c.unexpected, c.noisy, c.fenced_refused, c.dead_thread_gone, c.dead_budget, c.dead_cancel
        ),
    ];
    lines.extend(
        out.verdict
            .violations
            .iter()
            .map(|v| format!("VIOLATION {v}")),
    );
    lines.push(verdict_word(out).to_owned());
    lines.push(format!("history sha256: {}", out.hash));
    lines
}

fn verdict_word(out: &RunOutcome) -> &'static str {
    if out.verdict.passed() {
        "passed"
    } else {
        "FAILED"
    }
}

/// A recorded trace replayed.
pub struct TraceReplay {
    /// What to print.
    pub lines: Vec<String>,
    /// The new history hashes like the recorded one.
    pub reproduced: bool,
    /// The new run passed the checker.
    pub passed: bool,
}

impl TraceReplay {
    /// Whether the replay reproduced the trace and passed.
    pub fn ok(&self) -> bool {
        self.reproduced && self.passed
    }
}

/// Re-runs the plan recorded in the trace at `path` (on a backend from `backends`, with
/// `mutant` switched on) and compares the new history with the recorded one.
pub fn replay_trace(
    path: &Path,
    backends: &BackendFactory,
    opts: &RunOptions,
    mutant: Option<Mutant>,
) -> Result<TraceReplay, String> {
    let trace = crate::campaign::trace::read(path)?;
    let backend = backends(mutant)?;
    let out = run_plan(&trace.plan, backend, opts, mutant);
    let mut lines = vec![
        format!(
            "trace {}: {} events, recorded history sha256: {}",
            path.display(),
            trace.entries.len(),
            trace.hash
        ),
        format!(
            "replayed: {} events, history sha256: {}",
            out.entries.len(),
            out.hash
        ),
    ];
    lines.extend(
        out.verdict
            .violations
            .iter()
            .map(|v| format!("VIOLATION {v}")),
    );
    let reproduced = out.hash == trace.hash;
    lines.push(if reproduced {
        format!(
            "the replay reproduces the trace exactly; {}",
            verdict_word(&out)
        )
    } else {
        "the replay does NOT reproduce the trace (different engine, store or flags?)".to_owned()
    });
    Ok(TraceReplay {
        lines,
        reproduced,
        passed: out.verdict.passed(),
    })
}
