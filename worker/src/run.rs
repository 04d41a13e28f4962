//! The worker's life: start-up checks in order, the lanes, the listener, the API; then the
//! graceful stop.
//!
//! Start-up refuses to go on (with an error naming what to do) when the database cannot be
//! reached or a pooled connection lacks the configured schema and timeouts (a pooler dropped
//! the start-up options) or a transaction pooler sits in front of it
//! (`tasklatch_pg::check_session_pooling`), when its schema is behind (`tasklatch migrate`),
//! when a failover could lose acknowledged writes and `database.allow_async_replication` is not
//! set ([`crate::replication`]), when the MCP or Agent Server configuration cannot be used,
//! when the Agent Server answers that the configured assistant does not exist or refuses the
//! credentials, when this host's clock is off the database's by more than
//! `engine.max_clock_skew_ms` ([`crate::clock_guard`]), or when the listen address is taken.
//!
//! Peers that are down do not stop the start. An Agent Server that cannot be asked (no
//! connection, a timeout, 5xx) defers the assistant check: the worker starts, serves its API and
//! runs its lanes (launches fail and back off meanwhile; a 404 on create is told apart from a
//! missing assistant by the launcher's own re-check), and [`crate::peers::watch_assistant`]
//! asks again in the background, 1 s doubling to 30 s, until it passes. `/readyz` stays about
//! the database and the lanes; its body's `peers` shows the Agent Server's and each MCP
//! server's last contacts ([`crate::peers`]).
//!
//! Stop, on the first SIGTERM/SIGINT: readiness turns false; every engine is told to shut down
//! (`Engine::begin_shutdown`: nothing new is started, rows claimed but not acted on are
//! released without counting a failure, calls in flight finish and write); the lanes stop
//! after their current pass and the wake-up listener stops; then the API, which answered
//! meanwhile (`/readyz` with 503), stops accepting connections and finishes the requests in
//! flight. The process exits when all of that is done, or after
//! nine tenths of the shortest lease, whichever comes first — then settles what submits still
//! owe (at most 15 s) and closes the MCP clients (at most 1 s): [`graceful_stop_bound`] in all.
//! A second signal exits at once.

use crate::api::health::Health;
use crate::api::{openapi, router, AppState};
use crate::backlog::BacklogGauges;
use crate::clock::SystemClock;
use crate::clock_guard;
use crate::config::{shortest_lease, Settings};
use crate::ids::{worker_id, RandomIds};
use crate::lane::{Heartbeat, Lane, LaneSummary};
use crate::metered::Metered;
use crate::metrics::Metrics;
use crate::peers::{self, PeerDriver, PeerHealth, PeerLauncher};
use crate::replication;
use crate::retention;
use crate::schema::{self, SchemaState};
use crate::shutdown::Signals;
use crate::ui::changes::ThreadChanges;
use crate::ui::Panel;
use crate::wakeup::{self, ListenTarget, Subscribers, Waker};
use sqlx::postgres::PgPoolOptions;
use sqlx::PgPool;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use tasklatch_agent_server::{AgentServerLauncher, CheckError};
use tasklatch_core::engine::{Engine, OutageMemory};
use tasklatch_core::policy::Policy;
use tasklatch_mcp::McpDriver;
use tasklatch_pg::{PgStore, PoolingError, PrimaryFollower};
use tokio::sync::watch;
use tokio::task::JoinSet;

/// The engine of one lane.
pub type WorkerEngine = Engine<Metered<PgStore>, PeerDriver<McpDriver>, PeerLauncher, SystemClock>;

/// Why the worker did not start. Messages hold no secret.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The database answered with an error (while checking the schema or the clock).
    #[error("database: {0}")]
    Database(String),
    /// No connection to the database could be opened (refused, unknown host, credentials
    /// refused, or none within `database.connect_timeout_ms`): names the server (`host:port`)
    /// and the cause, never the URL or the password.
    #[error("{0}")]
    Unreachable(tasklatch_pg::ConnectError),
    /// The schema is not one this worker runs on.
    #[error("{0}")]
    Schema(String),
    /// The MCP servers' or the Agent Server's configuration cannot be used.
    #[error("{0}")]
    Config(String),
    /// The Agent Server answered the start-up check that the assistant does not exist, or
    /// refused the credentials (an Agent Server that cannot be reached does not stop the start).
    #[error("{0}")]
    AgentServer(String),
    /// The operating system refused something (listen address, signals, randomness).
    #[error("{0}")]
    System(String),
    /// This host's clock is off the database's by more than `engine.max_clock_skew_ms`.
    #[error("clock: {0}")]
    Clock(String),
    /// A failover could lose acknowledged writes and `database.allow_async_replication` is not
    /// set ([`crate::replication`]): what was found, what is at risk, how to fix it.
    #[error("replication: {0}")]
    Replication(String),
    /// A transaction pooler is in front of the database (`tasklatch_pg::check_session_pooling`):
    /// what was seen and what to use instead.
    #[error("pooler: {0}")]
    Pooler(String),
}

/// Connects a pool of `settings.database.pool_size` connections, each started in the configured
/// schema with the configured statement and lock timeouts (`settings.database.options` carry
/// them) and checked to have them before its first use (`tasklatch_pg::checked`: a pooler may
/// drop start-up options). A refused connection is retried until `database.connect_timeout_ms`;
/// a pool that cannot be opened, or whose connections lack the settings, is
/// [`StartError::Unreachable`], with the server and the cause (`tasklatch_pg::open_checked`).
///
/// A transaction pooler in front of the database is refused ([`StartError::Pooler`], the probe
/// `tasklatch_pg::check_session_pooling`): sqlx's statements need one backend per connection.
///
/// With `database.hosts`, the pool is on the host that takes writes (each probed within
/// [`tasklatch_pg::PROBE_TIMEOUT`], again until `database.connect_timeout_ms`) and refuses
/// connections to any other; it does not follow a failover ([`connect_database`] does).
pub async fn connect(settings: &Settings) -> Result<PgPool, StartError> {
    Ok(connect_database(settings).await?.0)
}

/// [`connect`], and with `database.hosts` the [`PrimaryFollower`] that keeps the pool on the
/// primary after a failover (run its `follow`); `None` for the URL's host alone.
pub async fn connect_database(
    settings: &Settings,
) -> Result<(PgPool, Option<PrimaryFollower>), StartError> {
    let db = &settings.database;
    let pool = PgPoolOptions::new()
        .max_connections(db.pool_size)
        .acquire_timeout(db.connect_timeout);
    let (pool, follower) = if db.hosts.is_empty() {
        tasklatch_pg::open_checked(pool, db.options.clone(), &db.session)
            .await
            .map(|pool| (pool, None))
            .map_err(StartError::Unreachable)?
    } else {
        let (base, session, hosts) = (db.options.clone(), &db.session, db.hosts.clone());
        let probe = tasklatch_pg::PROBE_TIMEOUT.min(db.connect_timeout);
        tasklatch_pg::open_following(pool, base, session, hosts, probe)
            .await
            .map(|(pool, follower)| (pool, Some(follower)))
            .map_err(StartError::Unreachable)?
    };
    match tasklatch_pg::check_session_pooling(&pool).await {
        Ok(()) => Ok((pool, follower)),
        Err(e) => {
            pool.close().await;
            Err(match e {
                PoolingError::Transaction(found) => StartError::Pooler(found.to_string()),
                PoolingError::Probe(e) => StartError::Database(e.to_string()),
            })
        }
    }
}

/// Refuses commits a failover could lose unless `database.allow_async_replication`
/// ([`crate::replication::check_at_start`]; with a host list, on its primary, and a lone
/// primary is refused when the list names more than one host); logs the replication mode.
pub async fn check_replication(
    pool: &PgPool,
    settings: &Settings,
) -> Result<tasklatch_pg::ReplicationMode, StartError> {
    let db = &settings.database;
    replication::check_at_start(pool, db.allow_async_replication, db.hosts.len()).await
}

/// The start-up line: what runs (version, commit), on what (database host and port, schema
/// and migrations), against whom (the MCP servers' ids, the Agent Server's URL and assistant)
/// and how (lanes, listen address, wake-ups, the agent tools: `off`, `read_only` or `on`).
/// Never a credential: the database password, header values and tokens stay out; the URLs in
/// the configuration hold none (checked).
fn log_started(settings: &Settings, lanes: usize) {
    let db = &settings.database;
    let servers: Vec<&str> = settings.mcp.servers.keys().map(String::as_str).collect();
    let agent_tools = match &settings.agent_tools {
        None => "off",
        Some(t) if t.read_only => "read_only",
        Some(_) => "on",
    };
    let database = match db.hosts.as_slice() {
        [] => format!("{}:{}", db.options.get_host(), db.options.get_port()),
        hosts => format!("primary of {}", tasklatch_pg::list_text(hosts)),
    };
    tracing::info!(
        version = crate::build_info::VERSION,
        commit = crate::build_info::COMMIT,
        database = %database,
        schema = %db.session.schema,
        migrations = tasklatch_pg::MIGRATOR.iter().count(),
        mcp_servers = %servers.join(","),
        agent_server = %settings.agent_server.base_url,
        assistant = %settings.agent_server.assistant_id,
        lanes,
        listen = %settings.listen,
        wakeups = settings.wakeups,
        agent_tools,
        "worker started"
    );
}

/// Refuses a schema this worker cannot run on.
pub async fn check_schema(pool: &PgPool) -> Result<(), StartError> {
    let state = schema::check(pool)
        .await
        .map_err(|e| StartError::Database(e.to_string()))?;
    if !state.runnable() {
        return Err(StartError::Schema(state.explain()));
    }
    if let SchemaState::Ahead { .. } = state {
        tracing::warn!("{}", state.explain());
    }
    Ok(())
}

/// How long the MCP clients get to close their transports at stop.
const CLOSE_CLIENTS_WITHIN: Duration = Duration::from_secs(1);

/// The longest a graceful stop takes, from the first signal to the exit: nine tenths of the
/// shortest lease for the lanes and the API, then up to [`SETTLE_OWED_WITHIN`] for what
/// submits still owe, then up to [`CLOSE_CLIENTS_WITHIN`] to close the MCP clients. A service
/// manager must wait longer than this before it kills the process (the systemd unit's
/// `TimeoutStopSec`, `deploy/systemd/tasklatch-worker.service`).
pub fn graceful_stop_bound(policy: &Policy) -> Duration {
    shortest_lease(policy) * 9 / 10 + SETTLE_OWED_WITHIN + CLOSE_CLIENTS_WITHIN
}

/// Runs the worker until a signal stops it.
pub async fn run(settings: Settings) -> Result<(), StartError> {
    let mut signals =
        Signals::install().map_err(|e| StartError::System(format!("signals: {e}")))?;
    let worker = start(&settings).await?;
    let signal = signals.next().await;
    signals.exit_on_next();
    tracing::info!(
        signal,
        "stopping: no new claims; in-flight calls finish, the rest is released"
    );
    worker.stop().await;
    Ok(())
}

/// A started worker: what its stop needs.
struct Running {
    engines: Vec<Arc<WorkerEngine>>,
    lanes: JoinSet<LaneSummary>,
    tasks: JoinSet<()>,
    stop_tx: watch::Sender<bool>,
    api_stop_tx: watch::Sender<bool>,
    health: Arc<Health>,
    driver: McpDriver,
    pool: PgPool,
    lease: Duration,
}

/// The start-up checks in order (the module's list), then the lanes, the background tasks and
/// the API. Returns once everything runs.
async fn start(settings: &Settings) -> Result<Running, StartError> {
    let (pool, follower) = connect_database(settings).await?;
    check_schema(&pool).await?;
    check_replication(&pool, settings).await?;
    let metrics = Arc::new(Metrics::new());
    let store = PgStore::new(pool.clone(), settings.policy.clone());
    let max_skew = settings.policy.max_clock_skew;
    clock_guard::check_at_start(&store, &SystemClock, max_skew, &metrics).await?;
    let servers = settings.mcp.servers.keys().map(String::as_str);
    let peers = Arc::new(PeerHealth::new(servers, Some(metrics.clone())));
    let driver =
        McpDriver::new(settings.mcp.clone()).map_err(|e| StartError::Config(e.to_string()))?;
    let engines = engines(settings, &pool, &metrics, &driver, &peers)?;
    let deferred = assistant_at_start(settings, &peers).await?;
    let listener = tokio::net::TcpListener::bind(settings.listen)
        .await
        .map_err(|e| StartError::System(format!("cannot listen on {}: {e}", settings.listen)))?;
    let ids = RandomIds::from_os().map_err(|e| StartError::System(format!("randomness: {e}")))?;

    let (stop_tx, stop_rx) = watch::channel(false);
    let waker = Waker::new(engines.len());
    let subscribers = subscribers(settings, &waker);
    let mut tasks = background(settings, &pool, &metrics, &stop_rx);
    tasks.spawn(wakeups(
        settings,
        follower.as_ref(),
        subscribers.clone(),
        &metrics,
        &stop_rx,
    ));
    if let Some(f) = &follower {
        tasks.spawn(f.clone().follow(stop_rx.clone()));
    }
    if let Some(first) = deferred {
        let launcher = launcher(settings)?;
        let watch = peers::watch_assistant(launcher, peers.clone(), first, stop_rx.clone());
        tasks.spawn(watch);
    }
    let (lanes, heartbeats) = spawn_lanes(settings, &engines, &waker, &metrics, &stop_rx);
    let health = Health::new(pool.clone(), heartbeats, stale_after(settings));
    let health = Arc::new(health.with_peers(peers.clone()).with_primary(follower));
    let mut state = app_state(settings, &pool, &engines, ids, &metrics, &health, &peers)?;
    state.ui = panel(settings, subscribers.threads, &stop_rx);
    // The API outlives the lanes: it answers (readiness 503 included) until they are done.
    let (api_stop_tx, api_stop_rx) = watch::channel(false);
    // Logged before the API serves: whoever sees `/readyz` answer finds the line written.
    log_started(settings, engines.len());
    tasks.spawn(serve(
        listener,
        router(state, settings.max_body_bytes, settings.max_in_flight),
        api_stop_rx,
    ));
    Ok(Running {
        engines,
        lanes,
        tasks,
        stop_tx,
        api_stop_tx,
        health,
        driver,
        pool,
        lease: shortest_lease(&settings.policy),
    })
}

impl Running {
    /// The graceful stop (the module's description), within [`graceful_stop_bound`].
    async fn stop(self) {
        self.health.stopping();
        for e in &self.engines {
            e.begin_shutdown();
        }
        let _ = self.stop_tx.send(true);
        stop(self.lanes, self.tasks, self.api_stop_tx, self.lease).await;
        settle_owed_submits(&self.engines, SETTLE_OWED_WITHIN).await;
        self.driver.close(CLOSE_CLIENTS_WITHIN).await;
        self.pool.close().await;
    }
}

/// Who the one listener tells: the lanes when `loops.wakeups`, the panel when `[ui]` is on.
fn subscribers(settings: &Settings, waker: &Waker) -> Subscribers {
    Subscribers {
        lanes: settings.wakeups.then(|| waker.clone()),
        threads: settings.ui.as_ref().map(|_| ThreadChanges::default()),
    }
}

/// The panel when `[ui]` is on, fed by the listener's `changes`; its push streams end when
/// `stop_rx` turns true (before the API stops, so the graceful stop never waits on one).
fn panel(
    settings: &Settings,
    changes: Option<ThreadChanges>,
    stop_rx: &watch::Receiver<bool>,
) -> Option<Arc<Panel>> {
    let (ui, changes) = settings.ui.clone().zip(changes)?;
    Some(Arc::new(Panel::new(ui, changes, stop_rx.clone())))
}

/// The one listener, when wake-ups (`loops.wakeups`) or the panel (`[ui]`) are switched on
/// (`to` says which): on `database.listen_url`, else on the followed primary, else on the
/// database URL ([`wakeup::ListenTarget`]).
fn wakeups(
    settings: &Settings,
    follower: Option<&PrimaryFollower>,
    to: Subscribers,
    metrics: &Arc<Metrics>,
    stop_rx: &watch::Receiver<bool>,
) -> impl std::future::Future<Output = ()> + Send + 'static {
    let db = &settings.database;
    let target = match (&db.listen_options, follower) {
        (Some(options), _) => ListenTarget::Fixed(Box::new(options.clone())),
        (None, Some(f)) => ListenTarget::Primary(f.clone()),
        (None, None) => ListenTarget::Fixed(Box::new(db.options.clone())),
    };
    let on = to.lanes.is_some() || to.threads.is_some();
    let listen = on.then(|| wakeup::listen_for(target, to, metrics.clone(), stop_rx.clone()));
    async move {
        if let Some(listen) = listen {
            listen.await;
        }
    }
}

/// The retention loop, as configured.
fn background(
    settings: &Settings,
    pool: &PgPool,
    metrics: &Arc<Metrics>,
    stop_rx: &watch::Receiver<bool>,
) -> JoinSet<()> {
    let mut tasks = JoinSet::new();
    if let Some(r) = settings.retention.clone() {
        let store = Metered::new(
            PgStore::new(pool.clone(), settings.policy.clone()),
            metrics.clone(),
        );
        tasks.spawn(retention::run(
            store,
            SystemClock,
            r,
            metrics.clone(),
            stop_rx.clone(),
        ));
    }
    tasks
}

/// The assistant check at start. `Ok(None)`: it passed. `Ok(Some(e))`: the Agent Server could
/// not be asked (`e`, logged): the worker starts anyway and the check is retried in the
/// background. `Err`: the server answered that the assistant does not exist or refused the
/// credentials — a configuration error, refused at start.
async fn assistant_at_start(
    settings: &Settings,
    peers: &PeerHealth,
) -> Result<Option<CheckError>, StartError> {
    match peers::check_assistant(&launcher(settings)?, peers).await {
        Ok(()) => Ok(None),
        Err(e) if e.is_definite() => Err(StartError::AgentServer(e.to_string())),
        Err(e) => {
            peers::log_check_failure(
                &e,
                "starting anyway, the check is retried in the background",
            );
            Ok(Some(e))
        }
    }
}

/// A launcher for the configured Agent Server (validated here; makes no request).
fn launcher(settings: &Settings) -> Result<AgentServerLauncher, StartError> {
    AgentServerLauncher::new(&settings.agent_server).map_err(|e| StartError::Config(e.to_string()))
}

fn app_state(
    settings: &Settings,
    pool: &PgPool,
    engines: &[Arc<WorkerEngine>],
    ids: RandomIds,
    metrics: &Arc<Metrics>,
    health: &Arc<Health>,
    peers: &Arc<PeerHealth>,
) -> Result<AppState<WorkerEngine>, StartError> {
    let servers: BTreeSet<String> = settings.mcp.servers.keys().cloned().collect();
    let threads = PeerLauncher::new(launcher(settings)?, peers.clone());
    let backlog = BacklogGauges::new(
        PgStore::new(pool.clone(), settings.policy.clone()),
        metrics.clone(),
    );
    Ok(AppState {
        tasks: engines[0].clone(),
        ids: Arc::new(ids),
        auth: Arc::new(settings.auth.clone()),
        servers: Arc::new(servers),
        threads: Arc::new(threads),
        metrics: metrics.clone(),
        health: health.clone(),
        backlog: Some(Arc::new(backlog)),
        openapi: openapi::document(
            settings.mcp.servers.keys().map(String::as_str),
            settings.ui.is_some(),
        )
        .into(),
        agent_tools: settings.agent_tools.clone().map(Arc::new),
        ui: None,
    })
}

/// Serves `app` until `stop` turns true, then finishes the requests in flight.
async fn serve(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    mut stop: watch::Receiver<bool>,
) {
    let stopped = async move {
        let _ = stop.wait_for(|s| *s).await;
    };
    if let Err(e) = axum::serve(listener, app)
        .with_graceful_shutdown(stopped)
        .await
    {
        tracing::error!(error = %e, "the API server failed");
    }
}

/// One engine per lane, each with its own launcher, all sharing `driver`; the driver and the
/// launchers record their contacts in `peers`.
fn engines(
    settings: &Settings,
    pool: &PgPool,
    metrics: &Arc<Metrics>,
    driver: &McpDriver,
    peers: &Arc<PeerHealth>,
) -> Result<Vec<Arc<WorkerEngine>>, StartError> {
    // One view of the MCP servers' outages for all lanes (core::engine::OutageMemory).
    let outages = OutageMemory::default();
    (0..settings.lanes)
        .map(|i| {
            let launcher = PeerLauncher::new(launcher(settings)?, peers.clone());
            let store = PgStore::new(pool.clone(), settings.policy.clone());
            Ok(Arc::new(
                Engine::new(
                    Metered::new(store, metrics.clone()),
                    PeerDriver::new(driver.clone(), peers.clone()),
                    launcher,
                    SystemClock,
                    worker_id(i),
                    settings.policy.clone(),
                )
                .sharing_outages(outages.clone()),
            ))
        })
        .collect()
}

fn spawn_lanes(
    settings: &Settings,
    engines: &[Arc<WorkerEngine>],
    waker: &Waker,
    metrics: &Arc<Metrics>,
    stop: &watch::Receiver<bool>,
) -> (JoinSet<LaneSummary>, Vec<Arc<Heartbeat>>) {
    let mut lanes = JoinSet::new();
    let mut heartbeats = Vec::new();
    for (index, engine) in engines.iter().enumerate() {
        let heartbeat = Arc::new(Heartbeat::default());
        heartbeats.push(heartbeat.clone());
        let lane = Lane {
            index,
            engine: engine.clone(),
            wake: waker.lane(index).unwrap_or_default(),
            tick: settings.tick,
            metrics: metrics.clone(),
            heartbeat,
        };
        let stop = stop.clone();
        lanes.spawn(async move { lane.run(&SystemClock, stop).await });
    }
    (lanes, heartbeats)
}

/// A lane that has not passed for this long makes the worker unready.
fn stale_after(settings: &Settings) -> Duration {
    settings.tick * 3 + settings.policy.min_lease_left * 3
}

/// The longest the stop spends settling what submits still owe (their handles above all).
const SETTLE_OWED_WITHIN: Duration = Duration::from_secs(15);

/// After the API stopped (no new submit can start): records the handles, withdrawals and
/// compensating cancels submits still owe (DOMAIN §7), retrying each second for at most
/// `within`. A handle still unsaved after that is not lost in silence: its intent's
/// `engine.submit_grace_ms` runs out and the task ends as untracked, telling its thread.
async fn settle_owed_submits(engines: &[Arc<WorkerEngine>], within: Duration) {
    let owed = |engines: &[Arc<WorkerEngine>]| -> usize {
        engines.iter().map(|e| e.pending_submits()).sum()
    };
    if owed(engines) == 0 {
        return;
    }
    let settled = tokio::time::timeout(within, async {
        loop {
            for e in engines {
                e.settle_all_submits().await;
            }
            if owed(engines) == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    })
    .await;
    match settled {
        Ok(()) => tracing::info!("every submit's pending write was settled before the stop"),
        Err(_) => tracing::warn!(
            still_owed = owed(engines),
            "submits still owed writes at the stop: a task whose remote id was not saved ends \
             as untracked after engine.submit_grace_ms, and its thread is told"
        ),
    }
}

/// Waits for the lanes, then stops the API and waits for it and the listener; at most nine
/// tenths of `lease` in all.
async fn stop(
    mut lanes: JoinSet<LaneSummary>,
    mut tasks: JoinSet<()>,
    api_stop: watch::Sender<bool>,
    lease: Duration,
) {
    let deadline = lease * 9 / 10;
    let drained = tokio::time::timeout(deadline, async {
        let mut released = 0;
        while let Some(done) = lanes.join_next().await {
            released += done.map(|s| s.released_at_stop).unwrap_or_default();
        }
        let _ = api_stop.send(true);
        while tasks.join_next().await.is_some() {}
        released
    })
    .await;
    match drained {
        Ok(released) => tracing::info!(
            released_at_stop = released,
            "stopped; leases released at stop counted no failure"
        ),
        Err(_) => tracing::warn!(
            deadline_ms = deadline.as_millis() as u64,
            "not stopped within the deadline; exiting, unfinished leases will expire"
        ),
    }
}
