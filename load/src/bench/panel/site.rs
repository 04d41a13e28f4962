//! The worker's HTTP side as the panel bench runs it: the real router (`api::router`) with
//! the panel on, over the real engine on `PgStore`, and the worker's one listener feeding the
//! panels' push streams — on a loopback port. No lanes run: the bench's changes are submits,
//! and a page render reads only the store. Thread ownership is answered here (every thread
//! `thread-<k>` belongs to `owner-<k>`) instead of by an agent server, so a render's cost is
//! the database's alone.

use crate::bench::{bench_policy, wall_clock, BenchError};
use crate::clock::ScaledClock;
use crate::doubles::inline::InlineDriver;
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tasklatch_core::engine::Engine;
use tasklatch_core::ids::{OwnerId, SeededIds, ThreadId, WorkerId};
use tasklatch_core::ledger::LedgerLauncher;
use tasklatch_pg::{connect_named, PgLedger, PgStore};
use tasklatch_worker::api::health::Health;
use tasklatch_worker::api::threads::{OwnerCheck, ThreadOwners};
use tasklatch_worker::api::{openapi, router, AppState};
use tasklatch_worker::config::{Auth, Ui};
use tasklatch_worker::metrics::Metrics;
use tasklatch_worker::token::hash_token;
use tasklatch_worker::ui::changes::{Change, ThreadChanges};
use tasklatch_worker::ui::Panel;
use tasklatch_worker::wakeup::{listen_for, ListenTarget, Subscribers};
use tokio::sync::watch;

/// The engine behind the router.
pub(super) type SiteEngine =
    Engine<PgStore, InlineDriver, LedgerLauncher<PgLedger, ScaledClock>, ScaledClock>;

/// The server's name in every submit.
pub(super) const SERVER: &str = "bench";
/// Connections of the router's pool.
const POOL: u32 = 8;
/// How long the listener may take to say it listens.
const LISTENING_WITHIN: Duration = Duration::from_secs(10);

/// Owner `k`'s name, thread and API token.
pub(super) fn owner(k: usize) -> (OwnerId, ThreadId, String) {
    (
        OwnerId(format!("owner-{k}")),
        ThreadId(format!("thread-{k}")),
        format!("bench-panel-token-{k}"),
    )
}

/// Thread `thread-<k>` is `owner-<k>`'s (the agent server's answer, without one).
struct NumberedOwners;

impl ThreadOwners for NumberedOwners {
    fn usable<'a>(&'a self, owner: &'a OwnerId, thread: &'a ThreadId) -> OwnerCheck<'a> {
        let mine = owner.0.strip_prefix("owner-") == thread.0.strip_prefix("thread-");
        Box::pin(async move { Ok(mine) })
    }
}

/// The running site: its address and engine; everything stops when `stop` turns true.
pub(super) struct Site {
    pub addr: SocketAddr,
    pub engine: Arc<SiteEngine>,
}

/// Starts the site on `url`'s database for `owners` owners.
pub(super) async fn start(
    url: &str,
    owners: usize,
    stop: watch::Receiver<bool>,
) -> Result<Site, BenchError> {
    let pool = connect_named(url, POOL, "tasklatch-store").await?;
    let clock = wall_clock();
    let policy = bench_policy(16);
    let engine = Arc::new(Engine::new(
        PgStore::new(pool.clone(), policy.clone()),
        InlineDriver,
        LedgerLauncher::new(PgLedger::new(pool.clone()), clock.clone()),
        clock,
        WorkerId::from("bench-panel"),
        policy,
    ));
    let changes = ThreadChanges::default();
    listen(url, &changes, stop.clone()).await?;
    let ui = Ui {
        frame_ancestors: "'none'".into(),
        secure_cookie: false,
        session_ttl: Duration::from_secs(3600),
    };
    let tokens = (0..owners)
        .map(|k| {
            let (owner, _, token) = owner(k);
            (hash_token(&token), owner)
        })
        .collect::<BTreeMap<_, _>>();
    let state = AppState {
        tasks: engine.clone(),
        ids: Arc::new(SeededIds::new(11)),
        auth: Arc::new(Auth::Tokens(tokens)),
        servers: Arc::new(BTreeSet::from([SERVER.to_owned()])),
        threads: Arc::new(NumberedOwners),
        metrics: Arc::new(Metrics::new()),
        health: Arc::new(Health::new(pool, Vec::new(), Duration::from_secs(60))),
        backlog: None,
        openapi: openapi::document([SERVER], true).into(),
        agent_tools: None,
        ui: Some(Arc::new(Panel::new(ui, changes, stop.clone()))),
    };
    let addr = serve(router(state, 64 << 10, 4096), stop).await?;
    Ok(Site { addr, engine })
}

/// Spawns the worker's listener and waits until it listens.
async fn listen(
    url: &str,
    changes: &ThreadChanges,
    stop: watch::Receiver<bool>,
) -> Result<(), BenchError> {
    let options = url
        .parse()
        .map_err(|e: sqlx::Error| BenchError(e.to_string()))?;
    let mut told = changes.subscribe();
    let to = Subscribers {
        lanes: None,
        threads: Some(changes.clone()),
    };
    let target = ListenTarget::Fixed(Box::new(options));
    tokio::spawn(listen_for(target, to, Arc::new(Metrics::new()), stop));
    match tokio::time::timeout(LISTENING_WITHIN, told.recv()).await {
        Ok(Ok(Change::All)) => Ok(()),
        other => Err(BenchError(format!("the listener did not start: {other:?}"))),
    }
}

/// Serves `app` on a loopback port until `stop`.
async fn serve(
    app: axum::Router,
    mut stop: watch::Receiver<bool>,
) -> Result<SocketAddr, BenchError> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| BenchError(format!("bind: {e}")))?;
    let addr = listener
        .local_addr()
        .map_err(|e| BenchError(format!("bind: {e}")))?;
    tokio::spawn(async move {
        let stopped = async move {
            let _ = stop.wait_for(|s| *s).await;
        };
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(stopped)
            .await;
    });
    Ok(addr)
}
