//! The report the server sends for a view of a remote task: its status spelling, the
//! script's texts (or defaults), the questions' request ids, and each quirk's breakage.

use super::content::render;
use super::model::{RemoteTask, View};
use crate::plan::{request_ids, QuirkKind, ScriptStatus, TaskPlan};
use crate::wire::mcp::{McpAnswer, WireHint, WireReport, WireText};

/// A question's text on the wire: its content (or a default) naming every request id of the
/// step, answered or not (one input request, as an elicitation form with several fields).
fn question(text: Option<WireText>, step: usize, questions: u32) -> WireText {
    let id: String = request_ids(step, questions)
        .iter()
        .map(|id| format!(" [{id}]"))
        .collect();
    match text.unwrap_or_else(|| WireText::Utf8("please confirm".into())) {
        WireText::Utf8(s) => WireText::Utf8(s + &id),
        WireText::Bytes(mut b) => {
            b.extend_from_slice(id.as_bytes());
            WireText::Bytes(b)
        }
    }
}

/// The report the server sends about task `t` of `plan` for `view` (unknown for a task the
/// server forgot).
pub fn report(t: &RemoteTask, plan: &TaskPlan, view: View<'_>) -> McpAnswer {
    let Some(status) = view.status() else {
        return McpAnswer::Unknown;
    };
    let mut r = WireReport {
        task_id: t.remote_id.clone(),
        status: status.to_owned(),
        hint: plan.hint_secs.map(WireHint::Secs),
        result: None,
        artifact: None,
        error: None,
        input_request: None,
    };
    match view {
        View::Scripted(s, text) => {
            let text = text.map(|c| render(c, t));
            match s {
                ScriptStatus::Working => {}
                ScriptStatus::InputRequired => {
                    r.input_request = text.or(Some(WireText::Utf8("please confirm".into())))
                }
                ScriptStatus::Completed => r.result = text.or(Some(WireText::Utf8("ok".into()))),
                ScriptStatus::Failed => {
                    r.error = text.or(Some(WireText::Utf8("remote failure".into())))
                }
                ScriptStatus::Cancelled => {}
            }
        }
        View::Asking {
            step,
            questions,
            text,
        } => {
            r.input_request = Some(question(text.map(|c| render(c, t)), step, questions));
        }
        View::Cancelled => {}
        View::Quirk(q) => match q {
            QuirkKind::NanHint => r.hint = Some(WireHint::NotANumber),
            QuirkKind::WrongTaskId => r.task_id = format!("{}-other", t.remote_id),
            QuirkKind::OversizedInputRequest => {
                r.input_request = Some(WireText::Utf8("q".repeat(5_000)))
            }
            QuirkKind::OversizedArtifact => r.artifact = Some(WireText::Utf8("a".repeat(5_000))),
            QuirkKind::UnknownStatus | QuirkKind::UnknownTask | QuirkKind::DuplicateHandle => {}
        },
    }
    McpAnswer::Report(r)
}
