//! The fault plan: an explicit, serialisable description of one simulation run — the workload
//! (tasks with their remote scripts, user actions) and the timed faults.
//!
//! A plan is generated from a seed ([`crate::plan::generate`]), but once written down it is the whole
//! truth: replaying a plan file reproduces the run, and shrinking edits the plan.

pub(crate) mod disguise;
pub(crate) mod echo;
pub(crate) mod fault;
mod feature;
pub(crate) mod gateway_mode;
pub(crate) mod generate;
pub(crate) mod json_input;
mod marks;
pub(crate) mod naming;
pub(crate) mod timing;

pub use fault::FaultMark;
pub use feature::{Feature, WorkloadMark};
pub use gateway_mode::GatewayMode;
pub use generate::{generate, Knobs};
pub use timing::sim_policy;

use crate::plan::fault::Fault;
use serde::{Deserialize, Serialize};

/// One simulation run, fully described.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// The seed the plan came from; also seeds turmoil and every host's randomness.
    pub seed: u64,
    /// Worker hosts.
    pub workers: u32,
    /// Engine lanes per worker (they share the worker's lease owner name).
    pub lanes: u32,
    /// Length of the chaos phase; every fault, script step and user action happens before it ends.
    pub chaos_ms: u64,
    /// The tasks users submit.
    pub tasks: Vec<TaskPlan>,
    /// What users do besides submitting.
    pub user: Vec<UserAction>,
    /// The timed faults.
    pub faults: Vec<Fault>,
    /// Which launcher peer the `gateway` host plays (absent: `ledger`).
    #[serde(default, skip_serializing_if = "GatewayMode::is_ledger")]
    pub gateway: GatewayMode,
    /// Worker 0 runs retention passes (the worker hosts' `retention` module); absent in older
    /// plans: nothing is ever deleted, and their histories stay what they were.
    #[serde(default, skip_serializing_if = "is_false")]
    pub retention: bool,
}

/// A task: who submits it, when, and how the remote job behaves.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskPlan {
    /// Task number, stable across shrinking (names the task in every report).
    pub n: u32,
    /// Owner number (`user-{owner}`).
    pub owner: u32,
    /// Thread number within the owner (`user-{owner}-thread-{thread}`).
    pub thread: u32,
    /// When the user submits it.
    pub submit_at_ms: u64,
    /// The server's poll hint for this task, in seconds.
    pub hint_secs: Option<f64>,
    /// The remote job's script: statuses at offsets after submit.
    pub steps: Vec<Step>,
    /// A remote misbehaviour that starts at some point and never stops.
    pub quirk: Option<Quirk>,
    /// How the server answers a cancel of this task (absent in older plans: at once).
    #[serde(default, skip_serializing_if = "CancelStyle::is_immediate")]
    pub cancel_style: CancelStyle,
    /// The user names the task with forged tags and boundary markers after `job-{n}` (see
    /// [`crate::plan::naming::task_name`]); absent in older plans: a benign name.
    #[serde(default, skip_serializing_if = "is_false")]
    pub hostile_name: bool,
}

/// Whether `b` is `false` (fields that are off are kept out of serialised plans).
fn is_false(b: &bool) -> bool {
    !*b
}

/// How a remote server answers a cancel: the three ways real servers do (DOMAIN §6).
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CancelStyle {
    /// Cancelled at once; the answer is the terminal report (or the end the task reached first).
    #[default]
    Immediate,
    /// The tasks extension: the answer is the current, non-terminal report (an acknowledgement);
    /// the cancel takes effect `after_ms` later.
    Acknowledged {
        /// How long after the cancel call the task is cancelled.
        after_ms: u64,
    },
    /// A legacy server: a cancel of a task that already ended is an error (-32602, "already
    /// terminal"); a cancel of a running task is taken at once.
    RejectsWhenTerminal,
}

impl CancelStyle {
    /// Today's default behaviour (kept out of serialised plans).
    pub fn is_immediate(&self) -> bool {
        *self == CancelStyle::Immediate
    }
}

/// One scripted remote status.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Offset after submit.
    pub after_ms: u64,
    /// The status from then on.
    pub status: ScriptStatus,
    /// Result, error or input request text for this status (may be hostile).
    pub text: Option<Content>,
    /// How many questions an `input_required` step asks at once, all named in its one input
    /// request ([`request_ids`]); the step asks until every one is answered. At least 1.
    #[serde(default = "one_question", skip_serializing_if = "is_one_question")]
    pub questions: u32,
}

fn one_question() -> u32 {
    1
}

fn is_one_question(n: &u32) -> bool {
    *n == 1
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// A scripted remote status (never `submitted`: that one is local).
#[derive(Copy, Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScriptStatus {
    /// Running.
    Working,
    /// Waiting for the user.
    InputRequired,
    /// Done.
    Completed,
    /// Failed.
    Failed,
    /// Cancelled by the server itself, nobody having asked (a quota, an operator, a shutdown):
    /// the report says `cancelled` and carries no text, like a cancel's.
    Cancelled,
}

impl ScriptStatus {
    /// Whether the script ends here (only a script's last step may be terminal).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            ScriptStatus::Completed | ScriptStatus::Failed | ScriptStatus::Cancelled
        )
    }
}

/// Text a remote server sends: ordinary, or hostile in one of several ways.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Content {
    /// Plain text.
    Plain(String),
    /// More characters than the result preview keeps.
    Oversized(u32),
    /// Text with NUL bytes inside.
    NulBytes(String),
    /// Bytes that are not UTF-8.
    InvalidUtf8(Vec<u8>),
    /// Forged closing tags, a `<system-reminder>` block and forged boundary markers.
    ForgedTags,
    /// The remote's own task id and driver data echoed back (planted secrets), in the shape
    /// of [`crate::plan::echo`]'s grammar, drawn when the plan was generated.
    EchoSecrets(Vec<echo::EchoPiece>),
    /// A denied tag, template token or boundary marker in disguise (look-alike, full-width,
    /// invisible characters; see [`crate::plan::disguise`]), drawn when the plan was generated.
    Disguised(String),
}

/// A remote misbehaviour from `after_ms` on (absorbing: it never stops).
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quirk {
    /// Offset after submit.
    pub after_ms: u64,
    /// What goes wrong.
    pub kind: QuirkKind,
}

/// Ways a remote server breaks the protocol for one task.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuirkKind {
    /// The server forgets the task.
    UnknownTask,
    /// The poll hint is NaN.
    NanHint,
    /// Reports name another task.
    WrongTaskId,
    /// A status outside the protocol.
    UnknownStatus,
    /// An input request longer than the limit.
    OversizedInputRequest,
    /// An artifact longer than the limit.
    OversizedArtifact,
    /// At submit, the server returns the handle of an earlier task of the same owner.
    DuplicateHandle,
}

/// A user action other than submitting.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UserAction {
    /// The owner cancels a task, possibly several times, possibly from two sessions at once.
    Cancel {
        /// Task number.
        task: u32,
        /// When.
        at_ms: u64,
        /// Extra requests after the first, one second apart.
        repeats: u32,
        /// The first request is sent twice at the same instant.
        concurrent: bool,
        /// Cancel by name instead of by id.
        by_name: bool,
    },
    /// Another owner tries to cancel the task (must be "not found").
    ForeignCancel {
        /// Task number.
        task: u32,
        /// The intruding owner.
        by_owner: u32,
        /// When.
        at_ms: u64,
    },
    /// The owner deletes a thread: later launches on it answer 404.
    DeleteThread {
        /// Owner number.
        owner: u32,
        /// Thread number.
        thread: u32,
        /// When.
        at_ms: u64,
    },
    /// The owner lists the thread's tasks (the listing is checked for isolation and secrets).
    List {
        /// Owner number.
        owner: u32,
        /// Thread number.
        thread: u32,
        /// When.
        at_ms: u64,
    },
    /// An operator requeues the task's notification if it is dead-lettered
    /// (`tasklatch dead-letters requeue`).
    Requeue {
        /// Task number.
        task: u32,
        /// When.
        at_ms: u64,
    },
    /// Someone answers the question the task's script asks at `at_ms` (request id `q{step}`,
    /// see [`request_id_at`]): its owner, or with `by_owner` another owner who presents the
    /// victim's exact thread, task id and request id (must be "not found").
    Answer {
        /// Task number.
        task: u32,
        /// When.
        at_ms: u64,
        /// The intruding owner, for a foreign answer.
        by_owner: Option<u32>,
        /// Which of the step's questions is answered (0 for the first; an index past the
        /// step's questions answers the first).
        #[serde(default, skip_serializing_if = "is_zero")]
        question: u32,
    },
}

/// The request id the remote server gives the first question of script step `step`.
pub fn request_id(step: usize) -> String {
    request_id_of(step, 0)
}

/// The request id of question `question` of script step `step`: `q{step}` for the first,
/// `q{step}_{question}` for the others.
pub fn request_id_of(step: usize, question: u32) -> String {
    match question {
        0 => format!("q{step}"),
        k => format!("q{step}_{k}"),
    }
}

/// The request ids of every question script step `step` asks, in order.
pub fn request_ids(step: usize, questions: u32) -> Vec<String> {
    (0..questions.max(1))
        .map(|k| request_id_of(step, k))
        .collect()
}

/// The request id of question `question` of the step `plan`'s script is at `at_ms` into the
/// run (the step's own ids, whatever its status: an answer to a step that asks nothing is the
/// user's mistake to make; a question past the step's count is its first).
pub fn request_id_at(plan: &TaskPlan, at_ms: u64, question: u32) -> String {
    let elapsed = at_ms.saturating_sub(plan.submit_at_ms);
    let step = plan
        .steps
        .iter()
        .rposition(|s| s.after_ms <= elapsed)
        .unwrap_or(0);
    let asked = plan.steps.get(step).map_or(1, |s| s.questions);
    request_id_of(step, if question < asked { question } else { 0 })
}

impl UserAction {
    /// The owner of task `task` cancels it once, by id, at `at_ms`.
    pub fn cancel_once(task: u32, at_ms: u64) -> Self {
        UserAction::Cancel {
            task,
            at_ms,
            repeats: 0,
            concurrent: false,
            by_name: false,
        }
    }

    /// When the action happens.
    pub fn at_ms(&self) -> u64 {
        match self {
            UserAction::Cancel { at_ms, .. }
            | UserAction::ForeignCancel { at_ms, .. }
            | UserAction::DeleteThread { at_ms, .. }
            | UserAction::List { at_ms, .. }
            | UserAction::Requeue { at_ms, .. }
            | UserAction::Answer { at_ms, .. } => *at_ms,
        }
    }
}

impl Plan {
    /// The task with number `n`.
    pub fn task(&self, n: u32) -> Option<&TaskPlan> {
        self.tasks.iter().find(|t| t.n == n)
    }

    /// Parses a plan file, naming the line, column and field of the first problem.
    pub fn from_json(text: &str) -> Result<Plan, String> {
        let plan: Plan = crate::plan::json_input::parse(text)?;
        plan.check()?;
        Ok(plan)
    }

    /// The plan as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Checks the plan's internal consistency.
    pub fn check(&self) -> Result<(), String> {
        if self.workers == 0 || self.workers > 16 {
            return Err("field `workers`: must be 1 to 16".into());
        }
        if self.lanes == 0 || self.lanes > 4 {
            return Err("field `lanes`: must be 1 to 4".into());
        }
        if self.chaos_ms == 0 || self.chaos_ms > 3_600_000 {
            return Err("field `chaos_ms`: must be 1 to 3600000".into());
        }
        let mut seen = std::collections::BTreeSet::new();
        for (i, t) in self.tasks.iter().enumerate() {
            if !seen.insert(t.n) {
                return Err(format!(
                    "field `tasks[{i}].n`: task number {} appears twice",
                    t.n
                ));
            }
            if t.submit_at_ms >= self.chaos_ms {
                return Err(format!(
                    "field `tasks[{i}].submit_at_ms`: must be before chaos_ms"
                ));
            }
            if t.hint_secs.is_some_and(|h| !h.is_finite() || h < 0.0) {
                return Err(format!(
                    "field `tasks[{i}].hint_secs`: must be a non-negative number"
                ));
            }
            for (j, s) in t.steps.iter().enumerate() {
                if s.status.is_terminal() && j + 1 != t.steps.len() {
                    return Err(format!(
                        "field `tasks[{i}].steps[{j}]`: only the last step may be terminal"
                    ));
                }
                if j > 0 && s.after_ms <= t.steps[j - 1].after_ms {
                    return Err(format!(
                        "field `tasks[{i}].steps[{j}].after_ms`: steps must be in increasing order"
                    ));
                }
            }
        }
        self.check_user()?;
        for (i, f) in self.faults.iter().enumerate() {
            f.kind
                .check(self.workers, self.lanes)
                .map_err(|(field, problem)| {
                    format!("field `faults[{i}].kind.{field}`: {problem}")
                })?;
        }
        Ok(())
    }

    /// Checks the user actions: before the chaos phase ends, about tasks of the plan, foreign
    /// answers by another owner.
    fn check_user(&self) -> Result<(), String> {
        for (i, a) in self.user.iter().enumerate() {
            if a.at_ms() >= self.chaos_ms {
                return Err(format!("field `user[{i}].at_ms`: must be before chaos_ms"));
            }
            if let UserAction::Cancel { task, .. }
            | UserAction::ForeignCancel { task, .. }
            | UserAction::Requeue { task, .. }
            | UserAction::Answer { task, .. } = a
            {
                if self.task(*task).is_none() {
                    return Err(format!("field `user[{i}].task`: no task {task}"));
                }
            }
            if let UserAction::Answer {
                task,
                by_owner: Some(by),
                ..
            } = a
            {
                if self.task(*task).is_some_and(|t| t.owner == *by) {
                    return Err(format!(
                        "field `user[{i}].by_owner`: a foreign answer needs another owner than the task's"
                    ));
                }
            }
        }
        Ok(())
    }
}
