//! `tasklatch tasks poll-now`: an operator brings polls forward
//! ([`tasklatch_core::store::Store::poll_sooner`]) — every pollable task of one MCP server (or
//! of all), or only those whose polls backed off — spread `spacing` apart so that the server
//! is not stampeded. Only the schedule changes: each poll is an ordinary, fenced poll.

use crate::clock::SystemClock;
use crate::ops::printable;
use std::time::Duration;
use tasklatch_core::ids::ServerId;
use tasklatch_core::policy::MAX_BATCH;
use tasklatch_core::ports::Clock;
use tasklatch_core::store::{PollSooner, Store, StoreError};

/// Pages of [`MAX_BATCH`] tasks at most: a million tasks.
const MAX_PAGES: u32 = 1_000;

/// What to bring forward.
#[derive(Clone, Debug)]
pub struct PollNow {
    /// One server's tasks, or every server's.
    pub server: Option<ServerId>,
    /// Only tasks whose last poll failed.
    pub backed_off_only: bool,
    /// The gap between two polls brought forward (at least 1 ms).
    pub spacing: Duration,
}

/// Brings the polls forward, page after page, and says how many moved and over how long.
/// `Ok((text, moved))`.
pub async fn poll_now(store: &impl Store, what: &PollNow) -> Result<(String, u64), StoreError> {
    let spacing = what.spacing.max(Duration::from_millis(1));
    let now = SystemClock.now();
    let mut req = PollSooner {
        server: what.server.clone(),
        backed_off_only: what.backed_off_only,
        now,
        from: now,
        spacing,
        limit: MAX_BATCH,
    };
    let (mut selected, mut moved) = (0, 0);
    for _ in 0..MAX_PAGES {
        let done = store.poll_sooner(req.clone()).await?;
        selected += done.selected;
        moved += done.moved;
        if done.selected < MAX_BATCH as u64 {
            break;
        }
        req.from = req.from.plus(spacing.saturating_mul(MAX_BATCH as u32));
    }
    let whose = what.server.as_ref().map_or("every server".to_owned(), |s| {
        format!("server {}", printable(s.as_str()))
    });
    let kind = if what.backed_off_only {
        "backed-off "
    } else {
        ""
    };
    let spread = spacing.saturating_mul(u32::try_from(selected).unwrap_or(u32::MAX));
    let text = format!(
        "{moved} {kind}tasks of {whose} are due again, {} ms apart (over {:.1} s); {} were due sooner already",
        spacing.as_millis(),
        spread.as_secs_f64(),
        selected - moved
    );
    Ok((text, moved))
}
