//! Binding: the core's writes and rows as statement parameters. Remote text is made storable
//! (NUL → U+FFFD) and stored errors bounded before they are bound, so no payload can make a
//! write fail; delays that depend on a counter are bound as tables of due times, so no time
//! arithmetic happens in SQL; a caller's text that no stored text can match ([`matchable`]) is
//! answered without a statement.

use super::{PgQuery, PgStore};
use crate::row::{event_json, storable, storable_opt, to_i64};
use tasklatch_core::ids::TaskId;
use tasklatch_core::lease::Lease;
use tasklatch_core::policy::{bounded, MAX_STORED_ERROR};
use tasklatch_core::task::TaskRow;
use tasklatch_core::time::Timestamp;
use tasklatch_core::transitions::outbox::NotifyAction;
use tasklatch_core::transitions::poll::PollUpdate;

/// Counted failures beyond this index all have the same retry delay (the backoff exponent caps
/// at 16 for `failures - 1`), so `now + retry_delay(n)` is passed as an array of 18 due times.
const DUE_TABLE: u32 = 17;

impl PgStore {
    /// `now + retry_delay(n)` for n = 0..=17, saturating exactly as core does.
    pub(super) fn due_table(&self, now: Timestamp) -> Vec<i64> {
        (0..=DUE_TABLE)
            .map(|n| now.plus(self.inner.policy.retry_delay(n)).as_micros())
            .collect()
    }

    /// `now + unavailable_delay(n)` for n = 0..=[`DUE_TABLE`] (the backoff of work waiting out
    /// an unavailable peer, indexed by its unanswered calls in a row).
    pub(super) fn outage_due_table(&self, now: Timestamp) -> Vec<i64> {
        (0..=DUE_TABLE)
            .map(|n| now.plus(self.inner.policy.unavailable_delay(n)).as_micros())
            .collect()
    }
}

/// The lease columns of a write batch: ids, owners, tokens.
pub(super) fn lease_arrays<'a>(
    items: impl Iterator<Item = (&'a TaskId, &'a Lease)>,
) -> (Vec<String>, Vec<String>, Vec<i64>) {
    let mut ids = Vec::new();
    let mut owners = Vec::new();
    let mut tokens = Vec::new();
    for (id, lease) in items {
        ids.push(storable(id.as_str()));
        owners.push(storable(lease.owner.as_str()));
        tokens.push(to_i64(lease.token.0));
    }
    (ids, owners, tokens)
}

/// The columns of poll updates (also the `finished` cancel action), one array per column.
#[derive(Default)]
pub(super) struct UpdateArrays {
    status: Vec<Option<String>>,
    result: Vec<Option<String>>,
    truncated: Vec<Option<bool>>,
    artifact: Vec<Option<String>>,
    error: Vec<Option<String>>,
    input_request: Vec<Option<String>>,
    updated_at: Vec<Option<i64>>,
    observed_at: Vec<Option<i64>>,
    next_at: Vec<Option<i64>>,
    errors: Vec<Option<i64>>,
    err_class: Vec<Option<String>>,
    err_msg: Vec<Option<String>>,
    event: Vec<Option<String>>,
    fingerprint: Vec<Option<String>>,
}

impl UpdateArrays {
    /// Adds one write's update (`None`: a write without one, all its columns NULL).
    pub(super) fn push(&mut self, u: Option<&PollUpdate>) {
        let Some(u) = u else {
            self.status.push(None);
            self.result.push(None);
            self.truncated.push(None);
            self.artifact.push(None);
            self.error.push(None);
            self.input_request.push(None);
            self.updated_at.push(None);
            self.observed_at.push(None);
            self.next_at.push(None);
            self.errors.push(None);
            self.err_class.push(None);
            self.err_msg.push(None);
            self.event.push(None);
            self.fingerprint.push(None);
            return;
        };
        let r = &u.remote;
        self.status.push(Some(r.status.as_str().to_owned()));
        self.result.push(storable_opt(r.result.as_deref()));
        self.truncated.push(Some(r.result_truncated));
        self.artifact.push(storable_opt(r.artifact.as_deref()));
        self.error.push(storable_opt(r.error.as_deref()));
        self.input_request
            .push(storable_opt(r.input_request.as_deref()));
        self.updated_at.push(Some(r.updated_at.as_micros()));
        self.observed_at
            .push(r.observed_at.map(Timestamp::as_micros));
        self.next_at.push(u.next_poll_at.map(Timestamp::as_micros));
        self.errors.push(Some(i64::from(u.consecutive_errors)));
        self.err_class
            .push(u.last_error.as_ref().map(|e| e.class.as_str().to_owned()));
        self.err_msg
            .push(u.last_error.as_ref().map(|e| storable(&e.message)));
        match &u.event {
            Some((event, fp)) => {
                self.event.push(Some(event_json(event)));
                self.fingerprint.push(Some(storable(&fp.0)));
            }
            None => {
                self.event.push(None);
                self.fingerprint.push(None);
            }
        }
    }

    /// Binds the arrays as the next 14 parameters, in the order the statements number them.
    pub(super) fn bind(self, q: PgQuery) -> PgQuery {
        q.bind(self.status)
            .bind(self.result)
            .bind(self.truncated)
            .bind(self.artifact)
            .bind(self.error)
            .bind(self.input_request)
            .bind(self.updated_at)
            .bind(self.observed_at)
            .bind(self.next_at)
            .bind(self.errors)
            .bind(self.err_class)
            .bind(self.err_msg)
            .bind(self.event)
            .bind(self.fingerprint)
    }
}

/// A stored error text: storable, then bounded as the transitions bound it.
pub(super) fn stored_error(e: &str) -> String {
    bounded(&storable(e), MAX_STORED_ERROR)
}

/// A notification step as `finish_notifications.sql` takes it: its kind, the launched run and
/// the stored error.
pub(super) fn notify_kind(a: &NotifyAction) -> (&'static str, Option<String>, Option<String>) {
    match a {
        NotifyAction::Launched(run) => ("launched", Some(storable(run.as_str())), None),
        NotifyAction::Busy => ("busy", None, None),
        NotifyAction::ThreadGone => ("thread_gone", None, None),
        NotifyAction::LaunchFailed(e) => ("launch_failed", None, Some(stored_error(e))),
        NotifyAction::RunSucceeded => ("run_succeeded", None, None),
        NotifyAction::RunFailed(e) => ("run_failed", None, Some(stored_error(e))),
        NotifyAction::RunOutlived(e) => ("run_outlived", None, Some(stored_error(e))),
        NotifyAction::RunPending => ("run_pending", None, None),
        NotifyAction::LookupUnavailable(e) => ("lookup_unavailable", None, Some(stored_error(e))),
        NotifyAction::LaunchUnavailable(e) => ("launch_unavailable", None, Some(stored_error(e))),
        NotifyAction::BudgetExhausted => ("budget_exhausted", None, None),
    }
}

/// Whether a caller-given text can match a stored id or name at all (stored ones never hold NUL).
pub(super) fn matchable(s: &str) -> bool {
    !s.contains('\0')
}

/// A lease as its three columns (owner, token, expiry), all NULL without one.
fn lease_columns(lease: &Option<Lease>) -> (Option<String>, Option<i64>, Option<i64>) {
    (
        lease.as_ref().map(|l| storable(l.owner.as_str())),
        lease.as_ref().map(|l| to_i64(l.token.0)),
        lease.as_ref().map(|l| l.expires_at.as_micros()),
    )
}

/// An optional time as its microseconds.
fn micros(t: Option<Timestamp>) -> Option<i64> {
    t.map(Timestamp::as_micros)
}

/// A whole row as the parameters of `insert_task.sql` and `record_handle.sql`: parameter n is
/// the n-th column of `insert_task.sql` (every column of `tasks` but the answer ones, which a
/// row written whole never sets), $1 to $58.
pub(super) fn bind_row(q: PgQuery, row: &TaskRow) -> PgQuery {
    let q = bind_identity_and_remote(q, row);
    let q = bind_poll(q, row);
    let q = bind_outbox(q, row);
    bind_cancel_and_later(q, row)
}

/// [`bind_row`]'s $1–$16: the identity and the remote state.
fn bind_identity_and_remote(q: PgQuery, row: &TaskRow) -> PgQuery {
    let id = &row.identity;
    let r = &row.remote;
    q.bind(storable(id.task_id.as_str()))
        .bind(storable(id.owner.as_str()))
        .bind(storable(id.thread.as_str()))
        .bind(storable(id.server.as_str()))
        .bind(storable(&id.name))
        .bind(storable(id.handle.remote_task_id.expose()))
        .bind(storable(id.handle.driver_data.expose()))
        .bind(id.created_at.as_micros())
        .bind(r.status.as_str())
        .bind(storable_opt(r.result.as_deref()))
        .bind(r.result_truncated)
        .bind(storable_opt(r.artifact.as_deref()))
        .bind(storable_opt(r.error.as_deref()))
        .bind(storable_opt(r.input_request.as_deref()))
        .bind(r.updated_at.as_micros())
        .bind(micros(r.observed_at))
}

/// [`bind_row`]'s $17–$24: the poll state.
fn bind_poll(q: PgQuery, row: &TaskRow) -> PgQuery {
    let p = &row.poll;
    let (owner, token, expires) = lease_columns(&p.lease);
    q.bind(micros(p.next_poll_at))
        .bind(i64::from(p.consecutive_errors))
        .bind(p.last_error.as_ref().map(|e| e.class.as_str()))
        .bind(p.last_error.as_ref().map(|e| storable(&e.message)))
        .bind(owner)
        .bind(token)
        .bind(expires)
        .bind(to_i64(p.claims))
}

/// [`bind_row`]'s $25–$43: the outbox, up to its dead letter.
fn bind_outbox(q: PgQuery, row: &TaskRow) -> PgQuery {
    let o = &row.outbox;
    let (owner, token, expires) = lease_columns(&o.lease);
    q.bind(to_i64(o.event_version))
        .bind(to_i64(o.notified_version))
        .bind(o.fingerprint.as_ref().map(|f| storable(&f.0)))
        .bind(o.event.as_ref().map(event_json))
        .bind(o.status.as_str())
        .bind(o.due_at.as_micros())
        .bind(owner)
        .bind(token)
        .bind(expires)
        .bind(to_i64(o.claims))
        .bind(to_i64(o.dispatch_version))
        .bind(o.dispatch_event.as_ref().map(event_json))
        .bind(i64::from(o.dispatch_attempt))
        .bind(o.run_id.as_ref().map(|r| storable(r.as_str())))
        .bind(i64::from(o.failures))
        .bind(i64::from(o.busy_count))
        .bind(o.last_error.as_deref().map(storable))
        .bind(o.dead_letter.map(|(v, _)| to_i64(v)))
        .bind(o.dead_letter.map(|(_, why)| why.as_str()))
}

/// [`bind_row`]'s $44–$58: the cancel state, then the columns later migrations added (launch
/// and settle times, both loops' unavailability), in table order.
fn bind_cancel_and_later(q: PgQuery, row: &TaskRow) -> PgQuery {
    let o = &row.outbox;
    let c = &row.cancel;
    let (owner, token, expires) = lease_columns(&c.lease);
    q.bind(micros(c.requested_at))
        .bind(c.status.as_str())
        .bind(micros(c.due_at))
        .bind(owner)
        .bind(token)
        .bind(expires)
        .bind(to_i64(c.claims))
        .bind(i64::from(c.failures))
        .bind(c.last_error.as_deref().map(storable))
        .bind(micros(o.launched_at))
        .bind(micros(o.settled_at))
        .bind(micros(o.unavailable_since))
        .bind(i64::from(o.outages))
        .bind(micros(c.unavailable_since))
        .bind(i64::from(c.outages))
}
