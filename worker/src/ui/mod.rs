//! The background-task panel: `/ui/threads/{thread}`, a server-rendered page of the
//! signed-in owner's tasks in one thread, usable standalone and in a chat app's iframe, live
//! by push with polling as the fallback (README "Background-task panel").
//!
//! | method | path | what |
//! |---|---|---|
//! | POST | `/ui/session` | the token exchange for a session cookie ([`login`]) |
//! | GET | `/ui/threads/{thread}` | the page ([`page`]) |
//! | GET | `/ui/threads/{thread}/tasks`, `…/tasks/{task}` | JSON with `ETag`/304 ([`json`]; in `/openapi.json`, [`openapi`]) |
//! | POST | `/ui/threads/{thread}/tasks/{task}/cancel`, `…/answer` | forms ([`actions`]) |
//! | GET | `/ui/threads/{thread}/events` | the push stream, SSE ([`events`]) |
//! | GET | `/ui/assets/{name}` | the compiled-in script and style sheet ([`assets`]) |
//!
//! Every call goes through the API's own functions (`api::tasks`, `api::answers`): the same
//! store calls, scope checks and neutralised public shapes; nothing secret (token, remote id,
//! driver data) reaches a page. Every answer carries a strict Content-Security-Policy
//! ([`headers`]). Without a session a page is 401 with the token form (not a redirect).
//! Off unless `[ui] enabled = true` (`crate::config::Ui`).

mod actions;
mod assets;
pub mod changes;
mod csrf;
mod error;
mod escape;
mod events;
mod headers;
mod json;
mod layout;
mod login;
pub mod openapi;
mod page;
mod sessions;
mod task_view;
mod visitor;

pub use events::MAX_STREAMS;
pub use sessions::MAX_SESSIONS;

use crate::api::{AppState, TaskService};
use crate::config::Ui;
use axum::middleware;
use axum::routing::{get, post};
use axum::Router;
use changes::ThreadChanges;
use sessions::Sessions;
use std::sync::Arc;
use tokio::sync::{watch, Semaphore};

/// What the panel's handlers share.
pub struct Panel {
    config: Ui,
    csp: String,
    sessions: Sessions,
    changes: ThreadChanges,
    streams: Arc<Semaphore>,
    stop: watch::Receiver<bool>,
}

impl Panel {
    /// The panel as `config` says, fed by `changes` (the worker's listener publishes into
    /// it); its push streams end when `stop` turns true.
    pub fn new(config: Ui, changes: ThreadChanges, stop: watch::Receiver<bool>) -> Panel {
        Panel {
            csp: headers::content_security_policy(&config.frame_ancestors),
            sessions: Sessions::new(config.session_ttl),
            config,
            changes,
            streams: Arc::new(Semaphore::new(MAX_STREAMS)),
            stop,
        }
    }
}

/// The panel's routes, each answer with the security headers ([`headers`]).
pub fn route<T: TaskService>(panel: Arc<Panel>) -> Router<AppState<T>> {
    let thread = "/ui/threads/{thread}";
    Router::new()
        .route("/ui/session", post(login::sign_in::<T>))
        .route("/ui/assets/{name}", get(assets::asset))
        .route(thread, get(page::page::<T>))
        .route(&format!("{thread}/events"), get(events::events::<T>))
        .route(&format!("{thread}/tasks"), get(json::list::<T>))
        .route(&format!("{thread}/tasks/{{task}}"), get(json::detail::<T>))
        .route(
            &format!("{thread}/tasks/{{task}}/cancel"),
            post(actions::cancel::<T>),
        )
        .route(
            &format!("{thread}/tasks/{{task}}/answer"),
            post(actions::answer::<T>),
        )
        .layer(middleware::from_fn_with_state(panel, headers::secure))
}
