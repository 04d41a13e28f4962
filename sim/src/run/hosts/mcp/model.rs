//! The remote task model, pure: what a remote task looks like at any moment.
//!
//! A task's state is a function of its plan's script and quirk, when it was created and
//! cancelled, which of its questions were answered, and the time asked about — nothing else
//! (no clock, no faults, no history). A question (an `input_required` step) names its request
//! ids ([`request_ids`]: `[q{step}]`, and `[q{step}_{k}]` for each further question the step
//! asks at once); once every one is answered the job carries on (`working`) until the script's
//! next step, and an answer naming no open question (or one already answered) changes nothing.
//! Terminal states, cancellation and quirks are absorbing: once a task settled, every later
//! view is the same — a stale poll can never make the last report differ from the state the
//! engine applied.

use crate::plan::{request_ids, CancelStyle, Content, QuirkKind, ScriptStatus, TaskPlan};

/// A remote task as the server keeps it.
#[derive(Clone, Debug)]
pub struct RemoteTask {
    /// Plan task number.
    pub n: u32,
    /// Owner.
    pub owner: String,
    /// Remote id (secret).
    pub remote_id: String,
    /// Driver data (secret).
    pub driver_data: String,
    /// When it was created.
    pub created_ms: u64,
    /// When a cancel took effect.
    pub cancelled_ms: Option<u64>,
    /// Questions answered: (script step, request id, when).
    pub answered: Vec<(usize, String, u64)>,
}

/// What a cancel did to a remote task (see [`RemoteTask::cancel`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CancelTaken {
    /// The task had already ended and its server rejects a cancel of an ended task (a legacy
    /// server, "already terminal"): nothing changed.
    Rejected,
    /// The task had already ended: nothing changed, its end stands.
    AlreadyEnded,
    /// Acknowledged: the task is cancelled some time after the first acknowledged cancel.
    Acknowledged,
    /// Cancelled at the cancel's time.
    Cancelled,
}

impl RemoteTask {
    /// Remote task of plan task `n`, created for `owner` at `created_ms` with its secrets:
    /// not cancelled, nothing answered.
    pub fn new(
        n: u32,
        owner: String,
        remote_id: String,
        driver_data: String,
        created_ms: u64,
    ) -> Self {
        RemoteTask {
            n,
            owner,
            remote_id,
            driver_data,
            created_ms,
            cancelled_ms: None,
            answered: Vec::new(),
        }
    }

    /// Whether request `request_id` of script step `step` was answered by `t_ms`.
    fn answered_by(&self, step: usize, request_id: &str, t_ms: u64) -> bool {
        self.answered
            .iter()
            .any(|(s, id, at)| *s == step && id == request_id && *at <= t_ms)
    }

    /// Whether every one of the `questions` of script step `step` was answered by `t_ms`.
    fn all_answered_by(&self, step: usize, questions: u32, t_ms: u64) -> bool {
        request_ids(step, questions)
            .iter()
            .all(|id| self.answered_by(step, id, t_ms))
    }

    /// A cancel at `t_ms`, taken in `plan`'s [`CancelStyle`]: a task that already ended stays
    /// as it is (and a legacy server rejects the cancel); otherwise the task is cancelled at
    /// `t_ms` (immediate, legacy) or `after_ms` after its first acknowledged cancel.
    pub fn cancel(&mut self, plan: &TaskPlan, t_ms: u64) -> CancelTaken {
        let view = view_at(self, plan, t_ms);
        match plan.cancel_style {
            CancelStyle::RejectsWhenTerminal
                if matches!(view, View::Scripted(..) | View::Cancelled) && view.is_terminal() =>
            {
                CancelTaken::Rejected
            }
            _ if view.is_terminal() => CancelTaken::AlreadyEnded,
            CancelStyle::Acknowledged { after_ms } => {
                if self.cancelled_ms.is_none() {
                    self.cancelled_ms = Some(t_ms + after_ms);
                }
                CancelTaken::Acknowledged
            }
            CancelStyle::Immediate | CancelStyle::RejectsWhenTerminal => {
                self.cancelled_ms = Some(t_ms);
                CancelTaken::Cancelled
            }
        }
    }

    /// An answer to request `request_id` at `t_ms`: when it names a question the task is
    /// asking at `t_ms` and not answered yet, that question is answered from `t_ms` on and its
    /// script step is returned; otherwise nothing changes (`None`).
    pub fn answer(&mut self, plan: &TaskPlan, request_id: &str, t_ms: u64) -> Option<usize> {
        let View::Asking {
            step, questions, ..
        } = view_at(self, plan, t_ms)
        else {
            return None;
        };
        let open = request_ids(step, questions)
            .iter()
            .any(|id| id == request_id)
            && !self.answered_by(step, request_id, t_ms);
        if !open {
            return None;
        }
        self.answered.push((step, request_id.to_owned(), t_ms));
        Some(step)
    }
}

/// The scripted step of `plan` `elapsed_ms` after submit: its index, status and text
/// (working, with no step, before the first one).
fn scripted(plan: &TaskPlan, elapsed_ms: u64) -> (Option<usize>, ScriptStatus, Option<&Content>) {
    plan.steps
        .iter()
        .rposition(|s| s.after_ms <= elapsed_ms)
        .map_or((None, ScriptStatus::Working, None), |i| {
            let s = &plan.steps[i];
            (Some(i), s.status, s.text.as_ref())
        })
}

/// How many questions script step `step` of `plan` asks at once.
fn questions_of(plan: &TaskPlan, step: usize) -> u32 {
    plan.steps.get(step).map_or(1, |s| s.questions.max(1))
}

/// The status the server reports, as seen at `t_ms`.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum View<'a> {
    /// A scripted status with its text (never `input_required`: see `Asking`).
    Scripted(ScriptStatus, Option<&'a Content>),
    /// The questions of script step `step`, not all answered yet.
    Asking {
        /// The script step (its request ids are [`request_ids`]).
        step: usize,
        /// How many questions it asks.
        questions: u32,
        /// The question's text.
        text: Option<&'a Content>,
    },
    /// Cancelled.
    Cancelled,
    /// A quirk took over.
    Quirk(QuirkKind),
}

impl View<'_> {
    /// Whether the remote task is finished for good.
    pub fn is_terminal(&self) -> bool {
        match self {
            View::Scripted(s, _) => s.is_terminal(),
            View::Asking { .. } => false,
            View::Cancelled | View::Quirk(_) => true,
        }
    }

    /// The status spelling a report carries (`None` for a task the server forgot).
    pub fn status(&self) -> Option<&'static str> {
        Some(match self {
            View::Scripted(ScriptStatus::Working, _) => "working",
            View::Scripted(ScriptStatus::InputRequired, _)
            | View::Asking { .. }
            | View::Quirk(QuirkKind::OversizedInputRequest) => "input_required",
            View::Scripted(ScriptStatus::Completed, _)
            | View::Quirk(QuirkKind::OversizedArtifact) => "completed",
            View::Scripted(ScriptStatus::Failed, _) => "failed",
            View::Scripted(ScriptStatus::Cancelled, _) | View::Cancelled => "cancelled",
            View::Quirk(QuirkKind::UnknownStatus) => "paused",
            View::Quirk(QuirkKind::UnknownTask) => return None,
            View::Quirk(
                QuirkKind::NanHint | QuirkKind::WrongTaskId | QuirkKind::DuplicateHandle,
            ) => "working",
        })
    }
}

/// What `task` looks like at `t_ms` (absorbing: terminal, cancelled and quirks never end).
pub fn view_at<'a>(task: &RemoteTask, plan: &'a TaskPlan, t_ms: u64) -> View<'a> {
    let age = t_ms.saturating_sub(task.created_ms);
    let settled_at = |ms: u64| scripted(plan, ms.saturating_sub(task.created_ms));
    if let Some(q) = &plan.quirk {
        let quirk_ms = task.created_ms + q.after_ms;
        let before_quirk_terminal = View::Scripted(settled_at(quirk_ms).1, None).is_terminal();
        let cancelled_before = task.cancelled_ms.is_some_and(|c| c <= quirk_ms);
        if t_ms >= quirk_ms
            && !before_quirk_terminal
            && !cancelled_before
            && q.kind != QuirkKind::DuplicateHandle
        {
            return View::Quirk(q.kind);
        }
    }
    if let Some(c) = task.cancelled_ms.filter(|c| *c <= t_ms) {
        let (_, status, text) = settled_at(c);
        return if status.is_terminal() {
            View::Scripted(status, text)
        } else {
            View::Cancelled
        };
    }
    match scripted(plan, age) {
        (Some(step), ScriptStatus::InputRequired, text) => {
            let questions = questions_of(plan, step);
            if task.all_answered_by(step, questions, t_ms) {
                View::Scripted(ScriptStatus::Working, None)
            } else {
                View::Asking {
                    step,
                    questions,
                    text,
                }
            }
        }
        (_, status, text) => View::Scripted(status, text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Quirk, Step};

    /// Task 1 created at 1 000 ms: working, a question (`questions` at once) at +1 000,
    /// completed at +5 000, answering cancels in `style`.
    fn plan(questions: u32, style: CancelStyle) -> TaskPlan {
        let step = |after_ms, status, text: Option<&str>| Step {
            after_ms,
            status,
            text: text.map(|t| Content::Plain(t.into())),
            questions: 1,
        };
        let mut asking = step(1_000, ScriptStatus::InputRequired, Some("which?"));
        asking.questions = questions;
        TaskPlan {
            n: 1,
            owner: 0,
            thread: 0,
            submit_at_ms: 1_000,
            hint_secs: None,
            steps: vec![
                step(0, ScriptStatus::Working, None),
                asking,
                step(5_000, ScriptStatus::Completed, Some("done")),
            ],
            quirk: None,
            cancel_style: style,
            hostile_name: false,
        }
    }

    fn task() -> RemoteTask {
        RemoteTask::new(1, "user-0".into(), "rem-1".into(), "drv-1".into(), 1_000)
    }

    fn text(s: &str) -> Content {
        Content::Plain(s.into())
    }

    #[test]
    fn a_view_follows_the_script_step_in_force_at_the_time_asked() {
        let (p, t) = (plan(1, CancelStyle::Immediate), task());
        assert_eq!(
            view_at(&t, &p, 1_500),
            View::Scripted(ScriptStatus::Working, None)
        );
        let asking = View::Asking {
            step: 1,
            questions: 1,
            text: Some(&text("which?")),
        };
        assert_eq!(
            view_at(&t, &p, 2_000),
            asking,
            "the step starts at its offset"
        );
        assert_eq!(
            view_at(&t, &p, 5_999),
            asking,
            "and lasts until the next one"
        );
        let done = View::Scripted(ScriptStatus::Completed, Some(&text("done")));
        assert_eq!(view_at(&t, &p, 6_000), done);
        assert_eq!(
            view_at(&t, &p, 60_000),
            done,
            "a terminal step is absorbing"
        );
        assert_eq!(done.status(), Some("completed"));
        assert!(done.is_terminal() && !asking.is_terminal());
    }

    #[test]
    fn an_answered_question_lets_the_job_work_on_from_the_answer_on() {
        let (p, mut t) = (plan(1, CancelStyle::Immediate), task());
        assert_eq!(t.answer(&p, "q9", 3_000), None, "names no open question");
        assert_eq!(t.answer(&p, "q1", 1_500), None, "asked nothing yet");
        assert_eq!(t.answer(&p, "q1", 3_000), Some(1));
        assert_eq!(t.answer(&p, "q1", 3_500), None, "answered already");
        assert!(matches!(view_at(&t, &p, 2_999), View::Asking { .. }));
        assert_eq!(
            view_at(&t, &p, 3_000),
            View::Scripted(ScriptStatus::Working, None)
        );
        assert_eq!(t.answered, vec![(1, "q1".to_owned(), 3_000)]);
    }

    #[test]
    fn a_step_asking_several_questions_asks_until_every_one_is_answered() {
        let (p, mut t) = (plan(2, CancelStyle::Immediate), task());
        let ids = request_ids(1, 2);
        assert_eq!(t.answer(&p, &ids[1], 2_500), Some(1));
        assert!(matches!(
            view_at(&t, &p, 2_600),
            View::Asking { questions: 2, .. }
        ));
        assert_eq!(t.answer(&p, &ids[0], 2_700), Some(1));
        assert_eq!(
            view_at(&t, &p, 2_700),
            View::Scripted(ScriptStatus::Working, None)
        );
    }

    #[test]
    fn a_cancel_of_a_terminal_task_changes_nothing_and_a_legacy_server_rejects_it() {
        let mut t = task();
        assert_eq!(
            t.cancel(&plan(1, CancelStyle::Immediate), 7_000),
            CancelTaken::AlreadyEnded
        );
        assert_eq!(
            t.cancel(&plan(1, CancelStyle::RejectsWhenTerminal), 7_000),
            CancelTaken::Rejected
        );
        assert_eq!(t.cancelled_ms, None);
    }

    #[test]
    fn a_cancel_of_a_running_task_is_absorbing_and_an_acknowledged_one_takes_effect_later() {
        let (p, mut t) = (plan(1, CancelStyle::RejectsWhenTerminal), task());
        assert_eq!(t.cancel(&p, 1_500), CancelTaken::Cancelled);
        assert_eq!(view_at(&t, &p, 1_500), View::Cancelled);
        assert_eq!(view_at(&t, &p, 60_000), View::Cancelled, "the script stops");

        let (p, mut t) = (plan(1, CancelStyle::Acknowledged { after_ms: 400 }), task());
        assert_eq!(t.cancel(&p, 1_500), CancelTaken::Acknowledged);
        assert_eq!(t.cancel(&p, 1_700), CancelTaken::Acknowledged);
        assert_eq!(
            t.cancelled_ms,
            Some(1_900),
            "the first cancel sets the time"
        );
        assert_eq!(
            view_at(&t, &p, 1_899),
            View::Scripted(ScriptStatus::Working, None)
        );
        assert_eq!(view_at(&t, &p, 1_900), View::Cancelled);
    }

    #[test]
    fn a_quirk_takes_over_a_running_task_only() {
        let mut p = plan(1, CancelStyle::Immediate);
        p.quirk = Some(Quirk {
            after_ms: 500,
            kind: QuirkKind::UnknownTask,
        });
        let t = task();
        assert_eq!(
            view_at(&t, &p, 1_499),
            View::Scripted(ScriptStatus::Working, None)
        );
        assert_eq!(view_at(&t, &p, 1_500), View::Quirk(QuirkKind::UnknownTask));
        assert_eq!(
            view_at(&t, &p, 1_500).status(),
            None,
            "the server forgot it"
        );
        p.quirk = Some(Quirk {
            after_ms: 6_000,
            kind: QuirkKind::UnknownTask,
        });
        assert!(
            matches!(
                view_at(&t, &p, 9_000),
                View::Scripted(ScriptStatus::Completed, _)
            ),
            "a task that ended before the quirk keeps its end"
        );
    }
}
