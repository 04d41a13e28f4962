//! The operator views behind `tasklatch tasks list|show|cancel` and `tasklatch dead-letters
//! list|requeue`: the same scoped store calls and whitelisted shapes as the API, printed for a
//! terminal; the dead-letter views and requeues are unscoped (of both kinds: notification and
//! cancel). Untrusted text (names, errors) has its control characters replaced, so a task
//! name cannot drive the operator's terminal.

use crate::api::shapes::{rfc3339, TaskDetailBody};
use crate::clock::SystemClock;
use crate::internal_view::InternalView;
use std::fmt::Write;
use tasklatch_core::ids::{ServerId, TaskId};
use tasklatch_core::policy::bounded;
use tasklatch_core::ports::Clock;
use tasklatch_core::status::{DeadLetterReason, NotifyStatus};
use tasklatch_core::store::{
    CancelOutcome, CancelRequeueOutcome, CancelTarget, ListOrder, RequeueOutcome, Scope, Store,
    StoreError,
};
use tasklatch_core::task::TaskRow;
use tasklatch_core::text::{PublicTask, TaskDetail};
use tasklatch_core::transitions::cancel;

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

/// One task's operational state as pretty JSON ([`InternalView`]), or `None` outside the scope.
pub async fn show_internal(
    store: &impl Store,
    scope: &Scope,
    id: &tasklatch_core::ids::TaskId,
) -> Result<Option<String>, StoreError> {
    let row = store.get_task(scope, id).await?;
    Ok(row.map(|row| InternalView::of(&row).to_json()))
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

/// Which work a dead letter stopped: delivering a notification, or cancelling the remote task.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum DeadLetterKind {
    /// A notification dead letter (`row.outbox`).
    Notify,
    /// A cancel dead letter (`row.cancel`).
    Cancel,
}

impl DeadLetterKind {
    /// The spelling `dead-letters list` prints and `--kind` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            DeadLetterKind::Notify => "notify",
            DeadLetterKind::Cancel => "cancel",
        }
    }
}

/// Which dead letters a bulk requeue takes; `None` matches anything.
#[derive(Clone, Debug, Default)]
pub struct DeadLetterFilter {
    /// Only this kind.
    pub kind: Option<DeadLetterKind>,
    /// Only dead letters given up for this reason.
    pub reason: Option<DeadLetterReason>,
    /// Only tasks on this MCP server.
    pub server: Option<ServerId>,
}

/// One dead letter found by [`find_dead_letters`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadLetterRef {
    /// The task.
    pub id: TaskId,
    /// Which of its work was given up.
    pub kind: DeadLetterKind,
}

/// The dead letters of `row` with their reasons (`None`: a notification dead letter with no
/// recorded reason). A notification requeued since keeps its old `dead_letter` record but is
/// no longer dead-lettered, so the status decides.
pub fn dead_letters_of(row: &TaskRow) -> Vec<(DeadLetterKind, Option<DeadLetterReason>)> {
    let mut found = Vec::new();
    if row.outbox.status == NotifyStatus::DeadLetter {
        let reason = row.outbox.dead_letter.map(|(_, r)| r);
        found.push((DeadLetterKind::Notify, reason));
    }
    if let Some(reason) = cancel::dead_letter_reason(row) {
        found.push((DeadLetterKind::Cancel, Some(reason)));
    }
    found
}

/// Reads the whole table in pages of [`PAGE`], unscoped; `visit` sees each row in id order
/// and returns `false` to stop. The number of rows read.
pub(crate) async fn scan(
    store: &impl Store,
    mut visit: impl FnMut(&TaskRow) -> bool,
) -> Result<usize, StoreError> {
    let (mut after, mut scanned) = (None, 0);
    loop {
        let page = store.admin_rows(after.take(), PAGE).await?;
        scanned += page.len();
        for row in &page {
            if !visit(row) {
                return Ok(scanned);
            }
        }
        match page.last() {
            Some(last) if page.len() == PAGE => after = Some(last.id().clone()),
            _ => return Ok(scanned),
        }
    }
}

/// Every dead letter `filter` takes, in task id order, and the number of rows read (the
/// whole table, in pages, unscoped).
pub async fn find_dead_letters(
    store: &impl Store,
    filter: &DeadLetterFilter,
) -> Result<(Vec<DeadLetterRef>, usize), StoreError> {
    let mut found = Vec::new();
    let scanned = scan(store, |row| {
        if filter
            .server
            .as_ref()
            .is_some_and(|s| s != &row.identity.server)
        {
            return true;
        }
        for (kind, reason) in dead_letters_of(row) {
            let kind_ok = filter.kind.is_none_or(|k| k == kind);
            let reason_ok = filter.reason.is_none_or(|r| Some(r) == reason);
            if kind_ok && reason_ok {
                found.push(DeadLetterRef {
                    id: row.id().clone(),
                    kind,
                });
            }
        }
        true
    })
    .await?;
    Ok((found, scanned))
}

/// The line saying what a notification requeue did, and whether it requeued.
fn notify_requeued(id: &str, outcome: &RequeueOutcome) -> (String, bool) {
    match outcome {
        RequeueOutcome::Requeued(v) => (
            format!("requeued {id} notification: its latest event is due again as version {v}, with a fresh budget"),
            true,
        ),
        RequeueOutcome::NotDeadLettered => (
            format!("{id} notification: not dead-lettered; nothing changed"),
            false,
        ),
        RequeueOutcome::NothingToDeliver => (
            format!("{id} notification: dead-lettered, but its latest state needs no notification; nothing changed"),
            false,
        ),
        RequeueOutcome::NotFound => (format!("{id}: no such task"), false),
    }
}

/// The line saying what a cancel requeue did, and whether it requeued.
fn cancel_requeued(id: &str, outcome: CancelRequeueOutcome) -> (String, bool) {
    match outcome {
        CancelRequeueOutcome::Requeued => (
            format!(
                "requeued {id} cancel: the remote cancel is due again now, with a fresh budget"
            ),
            true,
        ),
        CancelRequeueOutcome::NotDeadLettered => (
            format!("{id} cancel: not dead-lettered; nothing changed"),
            false,
        ),
        CancelRequeueOutcome::AlreadyFinished => (
            format!("{id} cancel: the task has finished, nothing left to cancel; nothing changed"),
            false,
        ),
        CancelRequeueOutcome::NotFound => (format!("{id}: no such task"), false),
    }
}

/// Requeues one dead letter (unscoped, an operator action): a notification's latest event is
/// delivered again as a new version, a cancel is due again; both with a fresh budget. The line
/// saying what happened, and whether it requeued.
pub async fn requeue_one(
    store: &impl Store,
    dead: &DeadLetterRef,
) -> Result<(String, bool), StoreError> {
    let id = printable(dead.id.as_str());
    let now = SystemClock.now();
    Ok(match dead.kind {
        DeadLetterKind::Notify => {
            notify_requeued(&id, &store.requeue_dead_letter(&dead.id, now).await?)
        }
        DeadLetterKind::Cancel => {
            cancel_requeued(&id, store.requeue_cancel_dead_letter(&dead.id, now).await?)
        }
    })
}

/// Requeues task `id`'s dead letters, of `kind` or of both kinds (its notification first), one
/// line per kind saying what happened; `false` when nothing was requeued.
pub async fn requeue(
    store: &impl Store,
    id: &TaskId,
    kind: Option<DeadLetterKind>,
) -> Result<(String, bool), StoreError> {
    let kinds = [DeadLetterKind::Notify, DeadLetterKind::Cancel];
    let mut lines = Vec::new();
    let mut any = false;
    for kind in kinds.into_iter().filter(|k| kind.is_none_or(|w| w == *k)) {
        let dead = DeadLetterRef {
            id: id.clone(),
            kind,
        };
        let (line, done) = requeue_one(store, &dead).await?;
        any |= done;
        if !lines.contains(&line) {
            lines.push(line);
        }
    }
    Ok((lines.join("\n"), any))
}

/// What a bulk requeue did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequeueTally {
    /// Notifications requeued.
    pub notifications: usize,
    /// Cancels requeued.
    pub cancels: usize,
    /// One line per dead letter left as it was (requeued, finished or deleted meanwhile).
    pub skipped: Vec<String>,
}

/// Skipped lines shown in a summary; the rest are counted.
const SHOWN_SKIPS: usize = 50;

impl RequeueTally {
    /// How many dead letters were requeued.
    pub fn requeued(&self) -> usize {
        self.notifications + self.cancels
    }

    /// The counts, then the skipped dead letters (at most 50 lines).
    pub fn summary(&self) -> String {
        let mut out = format!(
            "requeued {} ({} notifications, {} cancels); skipped {}\n",
            self.requeued(),
            self.notifications,
            self.cancels,
            self.skipped.len()
        );
        for line in self.skipped.iter().take(SHOWN_SKIPS) {
            let _ = writeln!(out, "  skipped {line}");
        }
        if self.skipped.len() > SHOWN_SKIPS {
            let _ = writeln!(out, "  … and {} more", self.skipped.len() - SHOWN_SKIPS);
        }
        out
    }
}

/// Requeues each of `found` in order (each atomic on its own row), counting what was requeued
/// and what was skipped because it changed since it was found. Stops at the first store error,
/// which is returned beside the tally of what was done before it.
pub async fn requeue_each(
    store: &impl Store,
    found: &[DeadLetterRef],
) -> (RequeueTally, Result<(), StoreError>) {
    let mut tally = RequeueTally::default();
    for dead in found {
        match requeue_one(store, dead).await {
            Ok((_, true)) if dead.kind == DeadLetterKind::Notify => tally.notifications += 1,
            Ok((_, true)) => tally.cancels += 1,
            Ok((line, false)) => tally.skipped.push(line),
            Err(e) => return (tally, Err(e)),
        }
    }
    (tally, Ok(()))
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
    let mut found = 0;
    let scanned = scan(store, |row| {
        for line in dead_letter_lines(row) {
            if found == limit {
                return false;
            }
            out.push_str(&line);
            found += 1;
        }
        true
    })
    .await?;
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
    dead_letters_of(row)
        .into_iter()
        .map(|(kind, reason)| {
            let (version, error) = match kind {
                DeadLetterKind::Notify => (
                    row.outbox
                        .dead_letter
                        .map_or("?".to_owned(), |(v, _)| v.to_string()),
                    shown(&row.outbox.last_error),
                ),
                DeadLetterKind::Cancel => ("-".to_owned(), shown(&row.cancel.last_error)),
            };
            format!(
                "{:<28}  {:<7}  {:<12}  {:<8}  {who} / {error}\n",
                printable(row.id().as_str()),
                kind.as_str(),
                reason.map_or("?", DeadLetterReason::as_str),
                version,
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tasklatch_core::conformance::support::{
        alice, claim, notify, poll_once, report, submitted, t,
    };
    use tasklatch_core::lease::LeaseKind;
    use tasklatch_core::mem_store::MemStore;
    use tasklatch_core::status::{CancelStatus, RemoteStatus};
    use tasklatch_core::store::CancelWrite;
    use tasklatch_core::transitions::cancel::CancelAction;
    use tasklatch_core::transitions::outbox::NotifyAction;

    #[test]
    fn printable_defuses_terminal_escapes() {
        assert_eq!(printable("a\u{1b}[2Jb\n"), "a\u{FFFD}[2Jb\u{FFFD}");
    }

    /// `c0` (server a) and `c1` (server b): working, their cancels dead-lettered (budget);
    /// `n` (server a): completed, its notification dead-lettered (thread gone).
    async fn store_with_dead_letters() -> MemStore {
        let s = MemStore::new(tasklatch_core::conformance::support::policy());
        let mut row = submitted("n", t(0));
        row.identity.server = "a".into();
        s.insert_task(row).await.expect("insert");
        poll_once(&s, "n", 1, |r| report(r, RemoteStatus::Completed, t(1)))
            .await
            .expect("poll");
        let c = claim(&s, LeaseKind::Notify, "w", t(2), 10).await.remove(0);
        notify(&s, &c, NotifyAction::ThreadGone, 2)
            .await
            .expect("notify");
        for (id, server) in [("c0", "a"), ("c1", "b")] {
            let mut row = submitted(id, t(2));
            row.identity.server = server.into();
            s.insert_task(row).await.expect("insert");
        }
        for id in ["c0", "c1"] {
            let target = CancelTarget::Id(id.into());
            s.request_cancel(&alice(), &target, t(3))
                .await
                .expect("cancel");
        }
        let writes = claim(&s, LeaseKind::Cancel, "w", t(4), 10)
            .await
            .into_iter()
            .map(|c| CancelWrite {
                task_id: c.row.id().clone(),
                lease: c.lease,
                action: CancelAction::BudgetExhausted,
            })
            .collect::<Vec<_>>();
        assert_eq!(writes.len(), 2);
        s.finish_cancels(writes, t(5)).await.expect("finish");
        s
    }

    fn refs(found: &[DeadLetterRef]) -> Vec<(&str, &str)> {
        found
            .iter()
            .map(|d| (d.id.as_str(), d.kind.as_str()))
            .collect()
    }

    #[tokio::test]
    async fn filters_take_kind_reason_and_server_together() {
        let s = store_with_dead_letters().await;
        let st = &s;
        let find = |filter: DeadLetterFilter| async move {
            find_dead_letters(st, &filter).await.expect("find")
        };
        let (all, scanned) = find(DeadLetterFilter::default()).await;
        assert_eq!(scanned, 3);
        let every = [("c0", "cancel"), ("c1", "cancel"), ("n", "notify")];
        assert_eq!(refs(&all), every);
        let cancels = DeadLetterFilter {
            kind: Some(DeadLetterKind::Cancel),
            ..DeadLetterFilter::default()
        };
        assert_eq!(refs(&find(cancels.clone()).await.0), every[..2].to_vec());
        let on_a = DeadLetterFilter {
            server: Some("a".into()),
            ..cancels.clone()
        };
        assert_eq!(refs(&find(on_a).await.0), [("c0", "cancel")]);
        let gone = DeadLetterFilter {
            reason: Some(DeadLetterReason::ThreadGone),
            ..DeadLetterFilter::default()
        };
        assert_eq!(refs(&find(gone.clone()).await.0), [("n", "notify")]);
        let none = DeadLetterFilter {
            kind: Some(DeadLetterKind::Cancel),
            ..gone
        };
        assert!(find(none).await.0.is_empty());
    }

    #[tokio::test]
    async fn a_bulk_requeue_counts_what_changed_meanwhile_as_skipped() {
        let s = store_with_dead_letters().await;
        let (found, _) = find_dead_letters(&s, &DeadLetterFilter::default())
            .await
            .expect("find");
        // Another operator requeues c1 between the scan and the requeue.
        let (text, done) = requeue(&s, &"c1".into(), None).await.expect("requeue");
        assert!(done, "{text}");
        assert_eq!(
            text,
            "c1 notification: not dead-lettered; nothing changed\n\
             requeued c1 cancel: the remote cancel is due again now, with a fresh budget"
        );
        let (tally, result) = requeue_each(&s, &found).await;
        assert!(result.is_ok());
        assert_eq!((tally.notifications, tally.cancels), (1, 1));
        assert_eq!(
            tally.skipped,
            ["c1 cancel: not dead-lettered; nothing changed"]
        );
        assert!(
            tally
                .summary()
                .starts_with("requeued 2 (1 notifications, 1 cancels); skipped 1\n"),
            "{}",
            tally.summary()
        );
        let rows = s.admin_rows(None, 10).await.expect("rows");
        assert!(rows.iter().all(|r| dead_letters_of(r).is_empty()));
        assert!(rows
            .iter()
            .filter(|r| r.id().as_str().starts_with('c'))
            .all(|r| r.cancel.status == CancelStatus::Requested));
        let (text, done) = requeue(&s, &"nope".into(), None).await.expect("requeue");
        assert_eq!((text.as_str(), done), ("nope: no such task", false));
    }

    #[tokio::test]
    async fn the_list_gives_a_cancel_dead_letter_its_reason() {
        let s = store_with_dead_letters().await;
        let out = dead_letters(&s, 100).await.expect("list");
        let line = out
            .lines()
            .find(|l| l.starts_with("c0 "))
            .unwrap_or_default();
        assert!(line.contains("cancel") && line.contains("budget"), "{out}");
        assert!(out.contains("3 dead letters shown (3 tasks read)"), "{out}");
        let out = dead_letters(&s, 1).await.expect("list");
        assert!(out.contains("1 dead letters shown"), "{out}");
    }
}
