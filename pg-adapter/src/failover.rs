//! A pool that follows the primary of a host list across failovers ([`PrimaryFollower`]).
//!
//! [`open_following`] finds the primary ([`find_primary`], retried until the pool's acquire
//! timeout so a start during a failover waits), opens the pool on it with every new connection
//! checked for the session and for writes ([`checked_primary`]), and returns the follower.
//! [`PrimaryFollower::follow`], run as a background task, then:
//!
//! 1. **watches** the primary on a connection of its own: every [`CHECK_EVERY`] (at once when a
//!    pooled connection was refused as read-only) it asks whether the server still takes writes;
//! 2. when the answer is no, or the connection fails or does not answer within the probe
//!    timeout, the primary is **lost**: the pool is pointed at [`NO_PRIMARY_SOCKET`], a Unix
//!    socket that does not exist, so every call that needs a new connection fails at once as an
//!    I/O error (`StoreError::Unavailable`, "i/o error: entity not found") instead of waiting for
//!    the acquire timeout, and pooled connections made before are closed when next acquired;
//! 3. it **re-probes** every host, waiting [`FIRST_REPROBE`] doubling to [`MAX_REPROBE`] between
//!    rounds, until one takes writes; the pool is pointed at it
//!    (`PgPool::set_connect_options`) and subscribers of [`PrimaryFollower::primaries`] (the
//!    wake-up listener) are told. A primary on another host than the last counts as a change.
//!
//! [`PrimaryFollower::status`] reports the primary, the changes and the total time without one.

use crate::hosts::{list_text, tcp_base, Host};
use crate::pool::{open, ConnectError};
use crate::primary::{checked_primary, find_primary, role_of, NoPrimary, Role, PROBE_TIMEOUT};
use crate::session::SessionSettings;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, PgConnection, PgPool};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::{watch, Notify};

/// How often the watcher asks the primary whether it still takes writes.
pub const CHECK_EVERY: Duration = Duration::from_millis(500);
/// The first wait between two rounds of probes without a primary.
pub const FIRST_REPROBE: Duration = Duration::from_millis(250);
/// The longest wait between two rounds of probes.
pub const MAX_REPROBE: Duration = Duration::from_secs(2);
/// Where the pool points while there is no primary: a socket directory that does not exist, so
/// a new connection fails at once (an I/O error sqlx does not retry).
pub const NO_PRIMARY_SOCKET: &str = "/nonexistent/tasklatch-no-primary";

/// What [`PrimaryFollower::status`] reports.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct PrimaryStatus {
    /// The host the pool points at; `None` while there is no primary.
    pub primary: Option<Host>,
    /// The host list, in probe order.
    pub hosts: Vec<Host>,
    /// Primaries found on another host than the one before (failovers followed).
    pub changes: u64,
    /// Time spent without a primary since the follower started, the current spell included.
    pub without_primary: Duration,
}

struct State {
    current: Option<Host>,
    last: Host,
    changes: u64,
    without_since: Option<Instant>,
    without_total: Duration,
}

struct Shared {
    pool: PgPool,
    base: PgConnectOptions,
    hosts: Vec<Host>,
    probe_timeout: Duration,
    state: Mutex<State>,
    /// When the pool was last pointed elsewhere: older connections are not handed out.
    switched_at: Arc<Mutex<Instant>>,
    suspect: Arc<Notify>,
    primaries: watch::Sender<Option<Host>>,
}

/// Follows the primary of a host list for one pool. Cheap to clone.
#[derive(Clone)]
pub struct PrimaryFollower {
    shared: Arc<Shared>,
}

/// The pool on the primary of `hosts` (`base`, with `session` applied, pointed at each host),
/// and its follower (the module's steps; spawn [`PrimaryFollower::follow`]). Fails, naming the
/// hosts and what each answered, when no primary is found within `pool`'s acquire timeout.
pub async fn open_following(
    pool: PgPoolOptions,
    base: PgConnectOptions,
    session: &SessionSettings,
    hosts: Vec<Host>,
    probe_timeout: Duration,
) -> Result<(PgPool, PrimaryFollower), ConnectError> {
    let server = list_text(&hosts);
    tcp_base(&base).map_err(|e| ConnectError {
        server: server.clone(),
        cause: e.to_string(),
    })?;
    let primary = first_primary(&base, &hosts, probe_timeout, pool.get_acquire_timeout())
        .await
        .map_err(|e| ConnectError {
            server: server.clone(),
            cause: e.to_string(),
        })?;
    let suspect = Arc::new(Notify::new());
    let switched_at = Arc::new(Mutex::new(Instant::now()));
    let notify = suspect.clone();
    let pool = checked_primary(pool, session, move || notify.notify_one());
    let pool = open(
        not_before_switch(pool, switched_at.clone()),
        primary.apply(&base),
    )
    .await?;
    let (primaries, _) = watch::channel(Some(primary.clone()));
    let state = State {
        current: Some(primary.clone()),
        last: primary,
        changes: 0,
        without_since: None,
        without_total: Duration::ZERO,
    };
    let shared = Shared {
        pool: pool.clone(),
        base,
        hosts,
        probe_timeout,
        state: Mutex::new(state),
        switched_at,
        suspect,
        primaries,
    };
    Ok((
        pool,
        PrimaryFollower {
            shared: Arc::new(shared),
        },
    ))
}

/// A pool on the primary of `hosts` as it is now, not followed (for one-shot commands:
/// `tasklatch migrate`, the operator commands): every connection checked for `session` and,
/// with hosts, for writes. With no hosts, `base`'s own server ([`crate::open_checked`]).
pub async fn open_primary(
    pool: PgPoolOptions,
    base: PgConnectOptions,
    session: &SessionSettings,
    hosts: &[Host],
) -> Result<PgPool, ConnectError> {
    if hosts.is_empty() {
        return crate::pool::open_checked(pool, base, session).await;
    }
    let opened = open_following(pool, base, session, hosts.to_vec(), PROBE_TIMEOUT).await?;
    Ok(opened.0)
}

/// The primary, probing every host again until `within` has passed.
async fn first_primary(
    base: &PgConnectOptions,
    hosts: &[Host],
    probe_timeout: Duration,
    within: Duration,
) -> Result<Host, NoPrimary> {
    let started = Instant::now();
    let mut wait = FIRST_REPROBE;
    loop {
        match find_primary(base, hosts, probe_timeout).await {
            Ok(host) => return Ok(host),
            Err(e) if started.elapsed() + wait >= within => return Err(e),
            Err(_) => tokio::time::sleep(wait).await,
        }
        wait = (wait * 2).min(MAX_REPROBE);
    }
}

/// `pool` that closes, instead of handing out, a connection made before the last switch.
fn not_before_switch(pool: PgPoolOptions, switched_at: Arc<Mutex<Instant>>) -> PgPoolOptions {
    pool.before_acquire(move |_, meta| {
        let since_switch = lock(&switched_at).elapsed();
        Box::pin(async move { Ok(meta.age <= since_switch) })
    })
}

/// A poisoned lock still holds usable data (nothing here panics while holding one).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl PrimaryFollower {
    /// The primary now, the list, the changes and the time without a primary.
    pub fn status(&self) -> PrimaryStatus {
        let s = lock(&self.shared.state);
        let ongoing = s.without_since.map(|t| t.elapsed()).unwrap_or_default();
        PrimaryStatus {
            primary: s.current.clone(),
            hosts: self.shared.hosts.clone(),
            changes: s.changes,
            without_primary: s.without_total + ongoing,
        }
    }

    /// The primary as it changes: `None` while there is none (for the wake-up listener).
    pub fn primaries(&self) -> watch::Receiver<Option<Host>> {
        self.shared.primaries.subscribe()
    }

    /// The pool's connect options pointed at `host` (the session applied).
    pub fn options_for(&self, host: &Host) -> PgConnectOptions {
        host.apply(&self.shared.base)
    }

    /// Watches, loses and finds the primary (the module's steps) until `stop` turns true.
    pub async fn follow(self, mut stop: watch::Receiver<bool>) {
        loop {
            if !self.watch_primary(&mut stop).await {
                return;
            }
            self.lost();
            match self.find_again(&mut stop).await {
                Some(host) => self.found(host),
                None => return,
            }
        }
    }

    /// Returns `true` once the primary is lost, `false` on `stop`.
    async fn watch_primary(&self, stop: &mut watch::Receiver<bool>) -> bool {
        let Some(host) = lock(&self.shared.state).current.clone() else {
            return true;
        };
        let timeout = self.shared.probe_timeout;
        let connected = tokio::time::timeout(timeout, self.options_for(&host).connect()).await;
        let Ok(Ok(mut conn)) = connected else {
            return true;
        };
        let lost = loop {
            tokio::select! {
                biased;
                _ = stop.changed() => break false,
                _ = self.shared.suspect.notified() => {}
                _ = tokio::time::sleep(CHECK_EVERY) => {}
            }
            if !still_primary(&mut conn, timeout).await {
                break true;
            }
        };
        let _ = tokio::time::timeout(timeout, conn.close()).await;
        lost
    }

    /// Probes the hosts until one takes writes (`None` on `stop`).
    async fn find_again(&self, stop: &mut watch::Receiver<bool>) -> Option<Host> {
        let mut wait = FIRST_REPROBE;
        loop {
            let found = find_primary(
                &self.shared.base,
                &self.shared.hosts,
                self.shared.probe_timeout,
            );
            match found.await {
                Ok(host) => return Some(host),
                Err(e) => tracing::debug!(error = %e, "still no primary"),
            }
            tokio::select! {
                biased;
                _ = stop.changed() => return None,
                _ = tokio::time::sleep(wait) => {}
            }
            wait = (wait * 2).min(MAX_REPROBE);
        }
    }

    /// No primary: new connections fail at once, older ones are not handed out.
    fn lost(&self) {
        let mut s = lock(&self.shared.state);
        let last = s.last.clone();
        s.current = None;
        s.without_since = Some(Instant::now());
        drop(s);
        let nowhere = self.shared.base.clone().socket(NO_PRIMARY_SOCKET);
        self.shared.pool.set_connect_options(nowhere);
        *lock(&self.shared.switched_at) = Instant::now();
        self.shared.primaries.send_replace(None);
        tracing::warn!(
            last_primary = %last,
            hosts = %list_text(&self.shared.hosts),
            "lost the database primary: store calls fail at once until a new one is found"
        );
    }

    /// `host` is the primary: the pool and the subscribers point at it.
    fn found(&self, host: Host) {
        let mut s = lock(&self.shared.state);
        let without = s
            .without_since
            .take()
            .map(|t| t.elapsed())
            .unwrap_or_default();
        s.without_total += without;
        let changed = s.last != host;
        if changed {
            s.changes += 1;
        }
        s.last = host.clone();
        s.current = Some(host.clone());
        drop(s);
        self.shared
            .pool
            .set_connect_options(self.options_for(&host));
        *lock(&self.shared.switched_at) = Instant::now();
        self.shared.primaries.send_replace(Some(host.clone()));
        tracing::warn!(
            primary = %host,
            changed,
            without_primary_ms = without.as_millis() as u64,
            "database primary found"
        );
    }
}

/// Whether `conn`'s server still takes writes, answered within `timeout`.
async fn still_primary(conn: &mut PgConnection, timeout: Duration) -> bool {
    matches!(
        tokio::time::timeout(timeout, role_of(conn)).await,
        Ok(Ok(Role::Primary))
    )
}
