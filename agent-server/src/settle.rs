//! "Two looks, oldest wins" on the Agent Server ([`tasklatch_core::reconcile::oldest_wins`]):
//! what a look decides, and the rollback of the runs it says are duplicates.
//!
//! The first look (before a create) reports the oldest run holding the key and rolls back the
//! others it saw. The second look (right after a create) does the same with the new run in the
//! picture: if another run holding the key is older, the new run is rolled back and the oldest
//! reported. If the second look fails, the new run is rolled back and the launch fails — a run
//! is kept only once a look has confirmed it is the oldest (a retry of the key looks again).
//! Rollback is `POST /threads/{t}/runs/{r}/cancel?wait=true&action=rollback`: the server
//! deletes a pending or running run; a run that already ended stays (a duplicate, logged).

use crate::config::ValidConfig;
use crate::http::Http;
use crate::lookup::{find_run, Lookup};
use crate::text::failure;
use crate::wire::KeyedRun;
use serde_json::json;
use std::time::Instant;
use tasklatch_core::ids::{RunId, ThreadId};
use tasklatch_core::ports::LaunchOutcome;
use tasklatch_core::reconcile::oldest_wins;

/// Reports what a look saw (`mine`: the run this call created, if any): the oldest run holding
/// the key, after rolling back every other one. `None`: nothing seen, nothing made.
pub async fn settle(
    http: &Http,
    thread: &ThreadId,
    mine: Option<&RunId>,
    seen: &[KeyedRun],
    deadline: Instant,
) -> Option<LaunchOutcome> {
    let decision = oldest_wins(mine, seen)?;
    for run in &decision.cancel {
        rollback(http, thread, run, deadline).await;
    }
    Some(LaunchOutcome::Started(decision.deliver))
}

/// The second look, after this call created `mine` on `thread`, within `deadline`.
pub async fn second_look(
    http: &Http,
    cfg: &ValidConfig,
    thread: &ThreadId,
    key: &str,
    mine: RunId,
    deadline: Instant,
) -> LaunchOutcome {
    let seen = match find_run(http, cfg, thread, key).await {
        Ok(Lookup::Found(seen)) => seen,
        Ok(Lookup::Absent { .. }) => Vec::new(),
        Ok(Lookup::ThreadGone) => return LaunchOutcome::ThreadGone,
        Err(e) => {
            rollback(http, thread, &mine, deadline).await;
            return LaunchOutcome::Unavailable(failure(format_args!(
                "second look: {e}; the new run was rolled back"
            )));
        }
    };
    settle(http, thread, Some(&mine), &seen, deadline)
        .await
        .unwrap_or(LaunchOutcome::Started(mine))
}

/// Rolls `run` back, best effort: failures are logged (the run may then deliver twice).
pub async fn rollback(http: &Http, thread: &ThreadId, run: &RunId, deadline: Instant) {
    if Instant::now() >= deadline {
        tracing::warn!(%thread, %run, "no time left to roll back a duplicate run");
        return;
    }
    let path = format!("/threads/{thread}/runs/{run}/cancel?wait=true&action=rollback");
    match http.post(&path, &json!({})).await {
        Ok(answer) if (200..300).contains(&answer.status) || answer.status == 404 => {
            tracing::info!(%thread, %run, "rolled back a newer run holding the same key");
        }
        Ok(answer) => tracing::warn!(
            %thread, %run, status = answer.status,
            "the rollback of a duplicate run was refused (it may have ended)"
        ),
        Err(e) => {
            tracing::warn!(%thread, %run, error = %e, "the rollback of a duplicate run failed")
        }
    }
}
