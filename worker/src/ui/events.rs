//! `GET /ui/threads/{thread}/events`: the panel's push stream (server-sent events). The
//! owner's thread is checked as for the page; then the stream says `ready` once, and
//! `change` whenever the worker's one listener reports a write to this owner's thread (or
//! that notifications may have been lost) — the script then renders again. No data rides on
//! the stream: the page always reads the store through the API's calls. Each event's data
//! field repeats its name, because a browser's `EventSource` drops an event with no data
//! (axum writes no `data:` line for empty data).
//!
//! Limits: at most [`MAX_STREAMS`] streams at once (one more is 503: the script polls
//! instead); a comment every [`KEEP_ALIVE`] keeps proxies from closing an idle stream; every
//! stream ends when the worker begins to stop, so the graceful stop never waits on one.

use super::changes::{thread_key, Change};
use super::error::UiError;
use super::visitor::Visitor;
use crate::api::auth::Caller;
use crate::api::tasks::scope_of;
use crate::api::threads::check_submit_thread;
use crate::api::{ApiError, AppState, TaskService};
use crate::metrics::Metrics;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{broadcast, watch, OwnedSemaphorePermit};

/// Push streams open at once, at most.
pub const MAX_STREAMS: usize = 1_000;
/// How often an idle stream sends a comment.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// What one open stream holds: its permit is released, and the open-streams gauge lowered, when
/// the stream is dropped.
struct Stream {
    changes: broadcast::Receiver<Change>,
    key: String,
    stop: watch::Receiver<bool>,
    ready_sent: bool,
    _open: Open,
}

/// An open stream's share of the limit and of the gauge `tasklatch_ui_streams`.
struct Open {
    _permit: OwnedSemaphorePermit,
    metrics: Arc<Metrics>,
}

impl Open {
    fn new(permit: OwnedSemaphorePermit, metrics: Arc<Metrics>) -> Open {
        metrics.panel_stream(true);
        Open {
            _permit: permit,
            metrics,
        }
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.metrics.panel_stream(false);
    }
}

/// The stream (the module's contract).
pub async fn events<T: TaskService>(
    State(st): State<AppState<T>>,
    visitor: Visitor,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, UiError> {
    let panel = st.ui.clone().ok_or_else(ApiError::not_found)?;
    let scope = scope_of(Caller(visitor.owner), path, ApiError::not_found)?;
    check_submit_thread(st.threads.as_ref(), &scope).await?;
    let permit = panel.streams.clone().try_acquire_owned().map_err(|_| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many live panels; polling instead",
        )
    })?;
    let stream = Stream {
        changes: panel.changes.subscribe(),
        key: thread_key(&scope.owner, &scope.thread),
        stop: panel.stop.clone(),
        ready_sent: false,
        _open: Open::new(permit, st.metrics.clone()),
    };
    let events = futures::stream::unfold(stream, next);
    Ok(Sse::new(events)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response())
}

/// The stream's next event; `None` (the end) when the worker stops.
async fn next(mut s: Stream) -> Option<(Result<Event, Infallible>, Stream)> {
    if !s.ready_sent {
        s.ready_sent = true;
        return Some((Ok(Event::default().event("ready").data("ready")), s));
    }
    loop {
        let got = tokio::select! {
            _ = s.stop.wait_for(|stopping| *stopping) => return None,
            got = s.changes.recv() => got,
        };
        let mine = match got {
            Ok(Change::Thread(key)) => key == s.key,
            Ok(Change::All) | Err(RecvError::Lagged(_)) => true,
            Err(RecvError::Closed) => return None,
        };
        if mine {
            return Some((Ok(Event::default().event("change").data("change")), s));
        }
    }
}
