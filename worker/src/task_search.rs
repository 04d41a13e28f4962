//! `tasklatch tasks search`: the operator's list across owners and threads, filtered by remote
//! status, notification state, MCP server, owner and age.
//!
//! It reads the whole table in pages, unscoped, in task id order (like the dead-letter views),
//! and stops reading once `limit` matches are found, so a narrow filter on a large table reads
//! more than a wide one; the output says how many rows were read. Untrusted text (names) has
//! its control characters replaced. No remote id is printed.

use crate::api::shapes::rfc3339;
use crate::ops::{printable, scan};
use std::fmt::Write;
use std::time::Duration;
use tasklatch_core::ids::{OwnerId, ServerId};
use tasklatch_core::status::{NotifyStatus, RemoteStatus};
use tasklatch_core::store::{Store, StoreError};
use tasklatch_core::task::TaskRow;
use tasklatch_core::time::Timestamp;

/// The most matches one search prints.
pub const MAX_SEARCH_LIMIT: usize = 1_000;

/// Which tasks a search takes; `None` matches anything.
#[derive(Clone, Debug, Default)]
pub struct TaskFilter {
    /// Only tasks whose remote status is this.
    pub status: Option<RemoteStatus>,
    /// Only tasks whose notification is in this state.
    pub notification: Option<NotifyStatus>,
    /// Only tasks on this MCP server.
    pub server: Option<ServerId>,
    /// Only this owner's tasks.
    pub owner: Option<OwnerId>,
    /// Only tasks created at least this long before `now`.
    pub older_than: Option<Duration>,
}

impl TaskFilter {
    /// Whether `row` matches, at `now`.
    pub fn takes(&self, row: &TaskRow, now: Timestamp) -> bool {
        let id = &row.identity;
        self.status.is_none_or(|s| row.remote.status == s)
            && self.notification.is_none_or(|n| row.outbox.status == n)
            && self.server.as_ref().is_none_or(|s| id.server == *s)
            && self.owner.as_ref().is_none_or(|o| id.owner == *o)
            && self
                .older_than
                .is_none_or(|age| now.since(id.created_at) >= age)
    }
}

/// The matching tasks, at most `limit` (1 to [`MAX_SEARCH_LIMIT`]), in task id order, one line
/// each, then a line saying how many were shown and how many rows were read.
pub async fn search(
    store: &impl Store,
    filter: &TaskFilter,
    limit: usize,
    now: Timestamp,
) -> Result<String, StoreError> {
    assert!((1..=MAX_SEARCH_LIMIT).contains(&limit), "limit {limit}");
    let mut found: Vec<TaskRow> = Vec::new();
    let read = scan(store, |row| {
        if filter.takes(row, now) {
            found.push(row.clone());
        }
        found.len() < limit
    })
    .await?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<28}  {:<16}  {:<24}  {:<12}  {:<14}  {:<11}  {:<27}  NAME",
        "TASK", "OWNER", "THREAD", "SERVER", "STATUS", "NOTIFY", "CREATED"
    );
    for row in &found {
        let id = &row.identity;
        let _ = writeln!(
            out,
            "{:<28}  {:<16}  {:<24}  {:<12}  {:<14}  {:<11}  {:<27}  {}",
            id.task_id.as_str(),
            printable(id.owner.as_str()),
            printable(id.thread.as_str()),
            printable(id.server.as_str()),
            row.remote.status.as_str(),
            row.outbox.status.as_str(),
            rfc3339(id.created_at),
            printable(&id.name)
        );
    }
    let more = if found.len() == limit {
        " (limit reached: there may be more)"
    } else {
        ""
    };
    let _ = writeln!(out, "{} tasks shown{more} ({read} tasks read)", found.len());
    Ok(out)
}

/// Parses an age such as `90s`, `30m`, `6h` or `2d` (a whole number and one unit).
pub fn parse_age(text: &str) -> Result<Duration, String> {
    let bad = || format!("{text:?}: an age is a whole number and a unit: s, m, h or d (e.g. 30m)");
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (number, unit) = text.split_at(split);
    let n: u64 = number.parse().map_err(|_| bad())?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        _ => return Err(bad()),
    };
    n.checked_mul(seconds)
        .map(Duration::from_secs)
        .ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_parse_with_their_unit_and_bad_ones_are_refused() {
        assert_eq!(parse_age("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_age("30m"), Ok(Duration::from_secs(1_800)));
        assert_eq!(parse_age("2d"), Ok(Duration::from_secs(172_800)));
        for bad in ["", "30", "m", "3x", "-1h", "1.5h", "99999999999999999999d"] {
            assert!(parse_age(bad).is_err(), "{bad}");
        }
    }
}
