//! The operator views behind `tasklatch tasks list|show|cancel` and `tasklatch dead-letters
//! list|requeue`: the same scoped store calls and whitelisted shapes as the API, printed for a
//! terminal. Untrusted text (names, errors) has its control characters replaced, so a task
//! name cannot drive the operator's terminal.

use crate::api::shapes::{rfc3339, TaskDetailBody};
use crate::clock::SystemClock;
use std::fmt::Write;
use tasklatch_core::ids::TaskId;
use tasklatch_core::policy::bounded;
use tasklatch_core::ports::Clock;
use tasklatch_core::status::{CancelStatus, NotifyStatus};
use tasklatch_core::store::{
    CancelOutcome, CancelTarget, ListOrder, RequeueOutcome, Scope, Store, StoreError,
};
use tasklatch_core::task::TaskRow;
use tasklatch_core::text::{PublicTask, TaskDetail};

/// Rows read per page when scanning for dead letters.
const PAGE: usize = 500;
/// Characters of an error printed in the dead-letter list.
const SHOWN_ERROR: usize = 200;

/// `text` with every control character replaced by U+FFFD.
pub fn printable(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '\u{FFFD}' } else { c })
        .collect()
}

/// The caller's tasks in the thread, newest first, at most `limit`, one line each.
pub async fn list(store: &impl Store, scope: &Scope, limit: usize) -> Result<String, StoreError> {
    let rows = store.list_tasks(scope, ListOrder::Newest, limit).await?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<28}  {:<14}  {:<27}  {:<6}  NAME",
        "TASK", "STATUS", "UPDATED", "CANCEL"
    );
    for row in &rows {
        let t = PublicTask::from_row(row);
        let cancel = if t.cancel_requested { "yes" } else { "-" };
        let _ = writeln!(
            out,
            "{:<28}  {:<14}  {:<27}  {:<6}  {}",
            t.task_id.as_str(),
            t.status.as_str(),
            rfc3339(t.updated_at),
            cancel,
            printable(&t.name)
        );
    }
    let _ = writeln!(out, "{} of {} tasks", rows.len().min(limit), rows.len());
    Ok(out)
}

/// One task's detail as pretty JSON (the API's whitelisted shape), or `None` outside the scope.
pub async fn show(
    store: &impl Store,
    scope: &Scope,
    id: &tasklatch_core::ids::TaskId,
) -> Result<Option<String>, StoreError> {
    let Some(row) = store.get_task(scope, id).await? else {
        return Ok(None);
    };
    let body = TaskDetailBody::from(TaskDetail::from_row(&row));
    Ok(Some(
        serde_json::to_string_pretty(&body).unwrap_or_else(|_| "{}".into()),
    ))
}

/// Records a cancel request and says what it did.
pub async fn cancel(
    store: &impl Store,
    scope: &Scope,
    target: &CancelTarget,
) -> Result<String, StoreError> {
    let outcome = store
        .request_cancel(scope, target, SystemClock.now())
        .await?;
    Ok(match outcome {
        CancelOutcome::Requested(t) => format!("{t}: cancel requested"),
        CancelOutcome::AlreadyRequested(t) => format!("{t}: a cancel was already requested"),
        CancelOutcome::AlreadyFinished(t) => format!("{t}: already finished; nothing to cancel"),
        CancelOutcome::NotFound => "not found in this owner's thread".into(),
        CancelOutcome::Ambiguous(n) => format!("{n} active tasks have that name; cancel by id"),
    })
}

/// Requeues task `id`'s dead-lettered notification (unscoped, an operator action): its latest
/// event is delivered again as a new version with a fresh failure budget. The text says what
/// happened; `false` when nothing was requeued.
pub async fn requeue(store: &impl Store, id: &TaskId) -> Result<(String, bool), StoreError> {
    let id_shown = printable(id.as_str());
    Ok(match store.requeue_dead_letter(id, SystemClock.now()).await? {
        RequeueOutcome::Requeued(v) => (
            format!("requeued {id_shown}: its latest event is due again as version {v}, with a fresh budget"),
            true,
        ),
        RequeueOutcome::NotDeadLettered => (
            format!("{id_shown}: its notification is not dead-lettered; nothing changed"),
            false,
        ),
        RequeueOutcome::NothingToDeliver => (
            format!("{id_shown}: dead-lettered, but its latest state needs no notification; nothing changed"),
            false,
        ),
        RequeueOutcome::NotFound => (format!("{id_shown}: no such task"), false),
    })
}

/// Every dead letter (notification or cancel), at most `limit`, one line each. Reads the whole
/// table in pages of 500, unscoped (an operator view).
pub async fn dead_letters(store: &impl Store, limit: usize) -> Result<String, StoreError> {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<28}  {:<7}  {:<12}  {:<8}  OWNER / THREAD / LAST ERROR",
        "TASK", "KIND", "REASON", "VERSION"
    );
    let (mut after, mut found, mut scanned) = (None, 0, 0);
    'pages: loop {
        let page = store.admin_rows(after.clone(), PAGE).await?;
        scanned += page.len();
        for row in &page {
            for line in dead_letter_lines(row) {
                if found == limit {
                    break 'pages;
                }
                out.push_str(&line);
                found += 1;
            }
        }
        match page.last() {
            Some(last) if page.len() == PAGE => after = Some(last.id().clone()),
            _ => break,
        }
    }
    let _ = writeln!(out, "{found} dead letters shown ({scanned} tasks read)");
    Ok(out)
}

fn dead_letter_lines(row: &TaskRow) -> Vec<String> {
    let who = format!(
        "{} / {}",
        printable(row.identity.owner.as_str()),
        printable(row.identity.thread.as_str())
    );
    let shown = |e: &Option<String>| printable(&bounded(e.as_deref().unwrap_or("-"), SHOWN_ERROR));
    let mut lines = Vec::new();
    if row.outbox.status == NotifyStatus::DeadLetter {
        let (version, reason) = row
            .outbox
            .dead_letter
            .map_or(("?".to_owned(), "?"), |(v, r)| (v.to_string(), r.as_str()));
        lines.push(format!(
            "{:<28}  {:<7}  {:<12}  {:<8}  {who} / {}\n",
            row.id().as_str(),
            "notify",
            reason,
            version,
            shown(&row.outbox.last_error)
        ));
    }
    if row.cancel.status == CancelStatus::DeadLetter {
        lines.push(format!(
            "{:<28}  {:<7}  {:<12}  {:<8}  {who} / {}\n",
            row.id().as_str(),
            "cancel",
            "budget",
            "-",
            shown(&row.cancel.last_error)
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_defuses_terminal_escapes() {
        assert_eq!(printable("a\u{1b}[2Jb\n"), "a\u{FFFD}[2Jb\u{FFFD}");
    }
}
