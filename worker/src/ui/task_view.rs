//! One task of the panel, as a `<details>` element: the summary (name, status, last change)
//! and, on expand, its status, result preview, error, the questions with an answer form,
//! the notification state, the busy count and the cancel state, with a cancel confirmed in a
//! second step (plain HTML: no script needed). Every text is escaped here ([`html`]); the
//! fields come from the API's whitelisted, neutralised detail shape.

use super::csrf::FIELD;
use super::escape::{html, segment};
use crate::api::shapes::{AnswerState, CancelState, NotificationStatus, Status, TaskDetailBody};
use tasklatch_core::transitions::answer::asks_for;

/// Question ids listed with an answer form each, at most.
const MAX_QUESTIONS: usize = 10;

/// Whether a task in `status` is still running (the panel's "Active" section).
pub fn is_active(status: Status) -> bool {
    matches!(
        status,
        Status::Submitted | Status::Working | Status::InputRequired
    )
}

/// `d` as a `<details>` element; its forms post to `{base}/tasks/{id}/…` with `csrf`.
pub fn render(d: &TaskDetailBody, base: &str, csrf: &str) -> String {
    let action = format!("{base}/tasks/{}", segment(&d.task_id));
    let mut out = format!(
        "<details class=\"task\" data-task=\"{id}\"><summary><span class=\"name\">{name}</span> \
         <span class=\"status s-{status}\">{status}</span> \
         <time datetime=\"{at}\">{at}</time></summary>",
        id = html(&d.task_id),
        name = html(&d.name),
        status = status_text(d.status),
        at = html(&d.updated_at),
    );
    out.push_str(&facts(d));
    if matches!(d.status, Status::InputRequired) {
        out.push_str(&questions(d, &action, csrf));
    }
    if is_active(d.status) && !d.cancel_requested {
        out.push_str(&cancel_form(d, &action, csrf));
    }
    out.push_str("</details>");
    out
}

fn facts(d: &TaskDetailBody) -> String {
    let mut rows = vec![
        ("Status", status_text(d.status).to_owned()),
        ("Started", html(&d.created_at)),
        ("Updated", html(&d.updated_at)),
    ];
    if let Some(e) = &d.error {
        rows.push(("Error", format!("<pre>{}</pre>", html(e))));
    }
    if let Some(r) = &d.result_preview {
        let more = if d.result_truncated {
            " <em>(preview: the result is longer)</em>"
        } else {
            ""
        };
        rows.push(("Result", format!("<pre>{}</pre>{more}", html(r))));
    }
    let mut notification = notification_text(d.notification_status).to_owned();
    if let Some(since) = &d.notification_unavailable_since {
        notification.push_str(&format!(
            ", waiting for the Agent Server since {}",
            html(since)
        ));
    }
    rows.push(("Notification", notification));
    rows.push(("Busy answers", d.busy_count.to_string()));
    rows.push(("Cancel", cancel_text(d)));
    if let Some(a) = &d.answer {
        rows.push((
            "Answer",
            format!("{}: {}", html(&a.request_id), answer_text(a.status)),
        ));
    }
    let items: String = rows
        .iter()
        .map(|(k, v)| format!("<dt>{k}</dt><dd>{v}</dd>"))
        .collect();
    format!("<dl>{items}</dl>")
}

/// The question text and one answer form per question id it names (`[id]`), or one form
/// with an id field when it names none.
fn questions(d: &TaskDetailBody, action: &str, csrf: &str) -> String {
    let text = d.input_request.as_deref().unwrap_or_default();
    let mut out = format!("<div class=\"question\"><pre>{}</pre>", html(text));
    let ids = question_ids(text);
    let fields: Vec<String> = if ids.is_empty() {
        vec!["<label>Question id <input name=\"request_id\" required></label>".to_owned()]
    } else {
        ids.iter()
            .map(|id| {
                format!(
                    "<input type=\"hidden\" name=\"request_id\" value=\"{}\">\
                     <p>Answer to [{0}]</p>",
                    html(id)
                )
            })
            .collect()
    };
    for field in fields {
        out.push_str(&format!(
            "<form method=\"post\" action=\"{action}/answer\" class=\"answer\">\
             <input type=\"hidden\" name=\"{FIELD}\" value=\"{csrf}\">{field}\
             <label>Answer (a JSON object, e.g. {{\"action\": \"accept\", \"content\": {{…}}}}) \
             <textarea name=\"answer\" required rows=\"3\"></textarea></label>\
             <button type=\"submit\">Send the answer</button></form>",
            csrf = html(csrf),
        ));
    }
    out.push_str("</div>");
    out
}

/// The well-formed `[id]`s `text` names, in order, without repeats.
fn question_ids(text: &str) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for part in text.split('[').skip(1) {
        let Some((id, _)) = part.split_once(']') else {
            continue;
        };
        if asks_for(Some(text), id) && !ids.iter().any(|i| i == id) && ids.len() < MAX_QUESTIONS {
            ids.push(id.to_owned());
        }
    }
    ids
}

fn cancel_form(d: &TaskDetailBody, action: &str, csrf: &str) -> String {
    format!(
        "<details class=\"confirm\"><summary>Cancel…</summary>\
         <form method=\"post\" action=\"{action}/cancel\">\
         <input type=\"hidden\" name=\"{FIELD}\" value=\"{csrf}\">\
         <p>Cancel “{name}”? The remote task is asked to stop; how it ends is still reported in \
         the thread.</p><button type=\"submit\" class=\"danger\">Yes, cancel it</button>\
         </form></details>",
        csrf = html(csrf),
        name = html(&d.name),
    )
}

fn status_text(s: Status) -> &'static str {
    match s {
        Status::Submitted => "submitted",
        Status::Working => "working",
        Status::InputRequired => "input_required",
        Status::Completed => "completed",
        Status::Failed => "failed",
        Status::Cancelled => "cancelled",
    }
}

fn notification_text(s: NotificationStatus) -> &'static str {
    match s {
        NotificationStatus::None => "nothing to deliver",
        NotificationStatus::Pending => "pending",
        NotificationStatus::Claimed => "being sent",
        NotificationStatus::Dispatched => "run started",
        NotificationStatus::Retry => "will be retried",
        NotificationStatus::Delivered => "delivered",
        NotificationStatus::DeadLetter => "given up (dead letter)",
    }
}

fn cancel_text(d: &TaskDetailBody) -> String {
    let state = match d.cancel_status {
        None if d.cancel_requested => "requested",
        None => "not requested",
        Some(CancelState::Requested) => "requested",
        Some(CancelState::Sent) => "sent to the server",
        Some(CancelState::Failed) => "given up",
    };
    match &d.cancel_unavailable_since {
        Some(since) => format!("{state}, waiting for the MCP server since {}", html(since)),
        None => state.to_owned(),
    }
}

fn answer_text(s: AnswerState) -> &'static str {
    match s {
        AnswerState::Pending => "waiting to be sent",
        AnswerState::Sending => "being sent",
        AnswerState::Sent => "sent",
        AnswerState::Unconfirmed => "outcome unknown (not sent again)",
        AnswerState::Failed => "not accepted",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn question_ids_are_the_well_formed_bracketed_ones() {
        assert_eq!(
            question_ids("[q1] Colour? [q2] Size? [q1] again"),
            ["q1", "q2"]
        );
        assert_eq!(question_ids("[not an id] [] ["), Vec::<String>::new());
    }
}
