//! Liveness (`/healthz`), readiness (`/readyz`), metrics (`/metrics`) and the OpenAPI
//! document (`/openapi.json`). None needs credentials; none shows a secret.
//!
//! Ready means: not shutting down; the database answers within 2 s and its schema is one this
//! worker runs on; and every lane has started or ended a pass recently — within
//! `3 × tick + 3 × min_lease_left` (a pass runs three loops, and a loop's external calls end
//! within `min_lease_left` of starting).
//!
//! The body of `/readyz` also says how the worker's peers fared (`peers`: the Agent Server and
//! each configured MCP server — whether the last contact succeeded, when one last succeeded and
//! last failed, and what the assistant check found; see [`crate::peers`]). Peers never change
//! the status code: readiness is about the worker's own ability (its database, its lanes), and
//! a worker whose peers are down still serves the API and backs its calls off.
//!
//! With a host list (`database.hosts`) the body's `database` names the primary the pool is on
//! (`null` while there is none, which is also a problem), the hosts, the primary changes and
//! the time without a primary ([`tasklatch_pg::PrimaryFollower`]); `/metrics` takes the last two
//! as `tasklatch_db_primary_changes_total` and `tasklatch_db_without_primary_seconds_total`.
//!
//! `/readyz` needs no credentials, so its database check is shared: its result is kept for
//! [`DB_CHECK_CACHE`], and callers arriving while a check runs wait for that one — at most one
//! check at a time, at most one a second, however many callers. (The router's in-flight limit,
//! module `shed`, bounds the callers.)

use super::{AppState, TaskService};
use crate::clock::SystemClock;
use crate::lane::Heartbeat;
use crate::metrics::CONTENT_TYPE;
use crate::peers::{PeerHealth, PeersReport};
use crate::schema;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use serde::Serialize;
use sqlx::PgPool;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tasklatch_core::ports::Clock;
use tasklatch_pg::{PrimaryFollower, PrimaryStatus};
use tokio::sync::Mutex;
use utoipa::ToSchema;

/// How long the database may take to answer a readiness check.
const DB_CHECK_TIMEOUT: Duration = Duration::from_secs(2);
/// How long the database check's result is reused.
pub const DB_CHECK_CACHE: Duration = Duration::from_secs(1);

/// What readiness looks at.
pub struct Health {
    pool: PgPool,
    heartbeats: Vec<Arc<Heartbeat>>,
    stale_after: Duration,
    stopping: AtomicBool,
    /// The last database check: when it ended, and its problem if any.
    db_checked: Mutex<Option<(Instant, Option<String>)>>,
    peers: Option<Arc<PeerHealth>>,
    primary: Option<PrimaryFollower>,
}

/// The database as `/readyz` shows it with a host list.
#[derive(Serialize, ToSchema)]
pub struct DatabaseReport {
    /// The host (`host:port`) the pool is on; `null` while no host takes writes.
    pub primary: Option<String>,
    /// The host list, in probe order.
    pub hosts: Vec<String>,
    /// Primaries found on another host than the one before, since the start.
    pub primary_changes: u64,
    /// Seconds spent without a primary since the start.
    pub without_primary_seconds: f64,
}

impl Health {
    /// Readiness over `pool` and the lanes' `heartbeats`; a lane silent for longer than
    /// `stale_after` makes the worker unready.
    pub fn new(pool: PgPool, heartbeats: Vec<Arc<Heartbeat>>, stale_after: Duration) -> Self {
        Health {
            pool,
            heartbeats,
            stale_after,
            stopping: AtomicBool::new(false),
            db_checked: Mutex::new(None),
            peers: None,
            primary: None,
        }
    }

    /// The same, following the primary of a host list (`None`: the URL's host alone).
    pub fn with_primary(mut self, follower: Option<PrimaryFollower>) -> Self {
        self.primary = follower;
        self
    }

    /// The host list's primary and its record, when the database is a host list.
    pub fn primary(&self) -> Option<PrimaryStatus> {
        self.primary.as_ref().map(PrimaryFollower::status)
    }

    /// The same, with `peers` shown in `/readyz`'s body.
    pub fn with_peers(mut self, peers: Arc<PeerHealth>) -> Self {
        self.peers = Some(peers);
        self
    }

    /// The peers' health, when this readiness has a registry.
    pub fn peers(&self) -> Option<PeersReport> {
        self.peers.as_ref().map(|p| p.report())
    }

    /// From now on the worker reports itself unready (it is shutting down).
    pub fn stopping(&self) {
        self.stopping.store(true, Ordering::SeqCst);
    }

    /// What keeps the worker from being ready (empty when ready).
    pub async fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.stopping.load(Ordering::SeqCst) {
            problems.push("shutting down".to_owned());
        }
        if let Some(status) = self.primary().filter(|s| s.primary.is_none()) {
            problems.push(format!(
                "no database primary among {}",
                tasklatch_pg::list_text(&status.hosts)
            ));
        }
        problems.extend(self.database_problem().await);
        let now = SystemClock.now();
        for (i, beat) in self.heartbeats.iter().enumerate() {
            let silent = now.since(beat.last());
            if silent > self.stale_after {
                problems.push(format!(
                    "lane {i} has not passed for {} s",
                    silent.as_secs()
                ));
            }
        }
        problems
    }
}

impl Health {
    /// The database's problem, if any: the last check's when it ended less than
    /// [`DB_CHECK_CACHE`] ago, else a new check's (callers meanwhile wait for it).
    async fn database_problem(&self) -> Option<String> {
        let mut last = self.db_checked.lock().await;
        if let Some((at, problem)) = last.as_ref() {
            if at.elapsed() < DB_CHECK_CACHE {
                return problem.clone();
            }
        }
        let problem = match tokio::time::timeout(DB_CHECK_TIMEOUT, schema::check(&self.pool)).await
        {
            Ok(Ok(state)) if state.runnable() => None,
            Ok(Ok(state)) => Some(state.explain()),
            Ok(Err(_)) | Err(_) => Some("the database does not answer".to_owned()),
        };
        *last = Some((Instant::now(), problem.clone()));
        problem
    }
}

/// The readiness answer.
#[derive(Serialize, ToSchema)]
pub struct Readiness {
    /// Whether the worker is ready.
    pub ready: bool,
    /// What keeps it from being ready.
    pub problems: Vec<String>,
    /// How the peers fared (never part of `ready`); absent when the worker keeps no registry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peers: Option<PeersReport>,
    /// The primary of the host list (`database.hosts`); absent with the URL's host alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub database: Option<DatabaseReport>,
}

impl DatabaseReport {
    /// The report of `status`.
    pub fn of(status: &PrimaryStatus) -> Self {
        DatabaseReport {
            primary: status.primary.as_ref().map(ToString::to_string),
            hosts: status.hosts.iter().map(ToString::to_string).collect(),
            primary_changes: status.changes,
            without_primary_seconds: status.without_primary.as_secs_f64(),
        }
    }
}

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "operations", security(()),
    responses((status = 200, description = "The process is alive", body = String)))]
pub async fn healthz() -> &'static str {
    "ok"
}

/// Readiness: database reachable, schema current, loops passing (the status code); and, in the
/// body's `peers`, whether the Agent Server and each MCP server answered the last contact, with
/// the times of the last success and the last failure (RFC 3339). Peers never make it 503.
#[utoipa::path(get, path = "/readyz", tag = "operations", security(()),
    responses(
        (status = 200, description = "Ready", body = Readiness),
        (status = 503, description = "Not ready, and why", body = Readiness),
    ))]
pub async fn readyz<T: TaskService>(State(st): State<AppState<T>>) -> impl IntoResponse {
    let problems = st.health.problems().await;
    let status = if problems.is_empty() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let ready = problems.is_empty();
    st.metrics.readiness(ready);
    let peers = st.health.peers();
    let primary = st.health.primary();
    if let Some(p) = &primary {
        st.metrics.primary(p);
    }
    let database = primary.as_ref().map(DatabaseReport::of);
    (
        status,
        Json(Readiness {
            ready,
            problems,
            peers,
            database,
        }),
    )
}

/// The worker's metrics in the Prometheus text format. Each scrape checks readiness first (the
/// shared, cached check of `/readyz`), so `tasklatch_ready` is as fresh as the scrape; then
/// refreshes the backlog gauges (read from the database at most every 15 s, the last values
/// kept when a read fails: [`crate::backlog`]). Always 200.
#[utoipa::path(get, path = "/metrics", tag = "operations", security(()),
    responses((status = 200, description = "OpenMetrics text", body = String,
        content_type = "application/openmetrics-text")))]
pub async fn metrics<T: TaskService>(State(st): State<AppState<T>>) -> impl IntoResponse {
    let ready = st.health.problems().await.is_empty();
    st.metrics.readiness(ready);
    if let Some(primary) = st.health.primary() {
        st.metrics.primary(&primary);
    }
    if let Some(backlog) = &st.backlog {
        backlog.refresh(SystemClock.now()).await;
    }
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], st.metrics.render())
}

/// This document.
#[utoipa::path(get, path = "/openapi.json", tag = "operations", security(()),
    responses((status = 200, description = "The OpenAPI document", body = Object)))]
pub async fn openapi<T: TaskService>(State(st): State<AppState<T>>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        st.openapi.to_string(),
    )
}
