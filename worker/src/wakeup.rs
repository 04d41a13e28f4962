//! Instant wake-ups: `LISTEN tasklatch_wakeup`, coalesced into one pending pass per lane.
//!
//! A lane passes at least once per tick; a notification on [`CHANNEL`] makes every lane pass
//! at once instead. Each lane has a single-permit [`Notify`]: however many notifications arrive
//! while a lane is busy, it makes one more pass when it is done — a burst of 10,000 events does
//! not make 10,000 passes. Polling stays the fallback: a lost notification, or one sent while
//! the listener was reconnecting, costs at most one tick, never a delivery (the rows stay due
//! in the table). A lost connection wakes every lane once, for that reason.
//!
//! **The channel contract** (for writers, e.g. the store's SQL inside the writing
//! transaction): `SELECT pg_notify('tasklatch_wakeup', '<kind>')` where `<kind>` says what
//! changed (`submit`, `event`, `cancel`, `answer`). The payload is informational: every
//! notification wakes every lane, which runs all three loops. Postgres delivers a notification
//! at commit, and never for a rolled-back transaction.
//!
//! **The same connection** carries the background-task panel's `LISTEN`
//! ([`crate::ui::changes`]): one listener per worker serves both, each channel subscribed only
//! when its side is on ([`Subscribers`]).
//!
//! **Where it listens** ([`ListenTarget`]): `database.listen_url` when set (a direct connection
//! past a transaction pooler, which cannot carry `LISTEN`), else the pool's own database — with
//! a host list, the current primary: when the primary changes the listener drops its connection
//! and subscribes on the new one (notifications are sent on the primary only), and while there
//! is none it waits for one, polling meanwhile.

use crate::metrics::Metrics;
use crate::ui::changes::{self, ThreadChanges};
use sqlx::postgres::{PgConnectOptions, PgListener, PgNotification, PgPoolOptions};
use std::sync::Arc;
use std::time::Duration;
use tasklatch_pg::{Host, PrimaryFollower};
use tokio::sync::{watch, Notify};

/// The channel the worker listens on.
pub const CHANNEL: &str = "tasklatch_wakeup";
/// The first delay before reconnecting after a failure; doubles up to [`MAX_RETRY`].
const FIRST_RETRY: Duration = Duration::from_millis(250);
/// The longest delay between reconnection attempts.
const MAX_RETRY: Duration = Duration::from_secs(30);

/// One single-permit wake-up per lane.
#[derive(Clone, Default)]
pub struct Waker {
    lanes: Arc<Vec<Arc<Notify>>>,
}

impl Waker {
    /// Wake-ups for `lanes` lanes.
    pub fn new(lanes: usize) -> Self {
        Waker {
            lanes: Arc::new((0..lanes).map(|_| Arc::new(Notify::new())).collect()),
        }
    }

    /// Lane `i`'s wake-up (`notified()` resolves at once if a wake-up came since the last).
    pub fn lane(&self, i: usize) -> Option<Arc<Notify>> {
        self.lanes.get(i).cloned()
    }

    /// Wakes every lane: a lane that is waiting passes now; a busy one passes once more when
    /// it is done (one stored permit, however many wake-ups).
    pub fn wake_all(&self) {
        for lane in self.lanes.iter() {
            lane.notify_one();
        }
    }
}

/// Who the listener tells: the lanes (wake-ups) and the open panels (thread changes).
#[derive(Clone, Default)]
pub struct Subscribers {
    /// The lanes, woken by every notification of [`CHANNEL`]; `None`: wake-ups are off.
    pub lanes: Option<Waker>,
    /// The panels, told every notification of [`changes::CHANNEL`]; `None`: no panel.
    pub threads: Option<ThreadChanges>,
}

impl Subscribers {
    /// The channels to `LISTEN` on.
    fn channels(&self) -> Vec<&'static str> {
        let lanes = self.lanes.as_ref().map(|_| CHANNEL);
        let threads = self.threads.as_ref().map(|_| changes::CHANNEL);
        lanes.into_iter().chain(threads).collect()
    }

    /// Notifications may have been missed (a (re)connection): every side looks once.
    fn gap(&self) {
        if let Some(w) = &self.lanes {
            w.wake_all();
        }
        if let Some(t) = &self.threads {
            t.all();
        }
    }

    /// Hands `n` to the side of its channel.
    fn deliver(&self, n: &PgNotification, metrics: &Metrics) {
        match (n.channel(), &self.lanes, &self.threads) {
            (CHANNEL, Some(w), _) => {
                metrics.wakeup();
                w.wake_all();
            }
            (changes::CHANNEL, _, Some(t)) => t.publish(n.payload()),
            _ => {}
        }
    }
}

/// Where the listener connects (the module's "Where it listens").
#[derive(Clone)]
pub enum ListenTarget {
    /// Always these options: `database.listen_url`, or the one database URL.
    Fixed(Box<PgConnectOptions>),
    /// The current primary of a host list, followed across failovers.
    Primary(PrimaryFollower),
}

impl ListenTarget {
    /// The options to connect with now; `None` while a followed host list has no primary.
    fn options(&self) -> Option<PgConnectOptions> {
        match self {
            ListenTarget::Fixed(options) => Some(PgConnectOptions::clone(options)),
            ListenTarget::Primary(f) => f.status().primary.map(|h| f.options_for(&h)),
        }
    }

    /// The primary's changes, for a followed host list.
    fn changes(&self) -> Option<watch::Receiver<Option<Host>>> {
        match self {
            ListenTarget::Fixed(_) => None,
            ListenTarget::Primary(f) => Some(f.primaries()),
        }
    }
}

/// Resolves when the followed primary changes; never for a fixed target.
async fn primary_changed(changes: &mut Option<watch::Receiver<Option<Host>>>) {
    let changed = match changes {
        Some(rx) => rx.changed().await.is_ok(),
        None => false,
    };
    if !changed {
        std::future::pending::<()>().await;
    }
}

/// Listens on [`CHANNEL`] until `stop` turns true, waking `waker`'s lanes on every
/// notification: [`listen_to`] a fixed target, `options`.
pub async fn listen(
    options: PgConnectOptions,
    waker: Waker,
    metrics: Arc<Metrics>,
    stop: watch::Receiver<bool>,
) {
    listen_to(ListenTarget::Fixed(Box::new(options)), waker, metrics, stop).await
}

/// Listens on [`CHANNEL`] until `stop` turns true, waking `waker`'s lanes on every
/// notification: [`listen_for`] the lanes alone.
pub async fn listen_to(
    target: ListenTarget,
    waker: Waker,
    metrics: Arc<Metrics>,
    stop: watch::Receiver<bool>,
) {
    let only_lanes = Subscribers {
        lanes: Some(waker),
        threads: None,
    };
    listen_for(target, only_lanes, metrics, stop).await
}

/// Listens on the channels of `to` until `stop` turns true, telling each notification to its
/// side. Uses its own single connection (not the worker's pool) to `target`, reconnecting
/// with a backoff after errors, and at once when a followed primary changes.
pub async fn listen_for(
    target: ListenTarget,
    to: Subscribers,
    metrics: Arc<Metrics>,
    mut stop: watch::Receiver<bool>,
) {
    let channels = to.channels();
    let mut retry = FIRST_RETRY;
    let mut changes = target.changes();
    while !*stop.borrow() {
        match target.options() {
            None => {
                tracing::warn!("wake-up listener waits for a database primary; polling meanwhile")
            }
            Some(options) => match subscribe(&options, &channels).await {
                Ok(mut listener) => {
                    tracing::info!(channels = %channels.join(","), "listening for wake-ups");
                    retry = FIRST_RETRY;
                    // A notification may have been missed while connecting: look once.
                    to.gap();
                    let ends = receive(&mut listener, &to, &metrics, &mut stop, &mut changes);
                    if !ends.await {
                        return;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "wake-up listener cannot connect; polling meanwhile")
                }
            },
        }
        metrics.reconnect();
        tokio::select! {
            biased;
            _ = stop.changed() => return,
            _ = primary_changed(&mut changes) => {}
            _ = tokio::time::sleep(retry) => {}
        }
        retry = (retry * 2).min(MAX_RETRY);
    }
}

async fn subscribe(
    options: &PgConnectOptions,
    channels: &[&str],
) -> Result<PgListener, sqlx::Error> {
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(10))
        .idle_timeout(None)
        .max_lifetime(None)
        .connect_with(options.clone())
        .await?;
    let mut listener = PgListener::connect_with(&pool).await?;
    listener.listen_all(channels.iter().copied()).await?;
    Ok(listener)
}

/// Receives until an error or a change of the followed primary (returns `true`: reconnect) or
/// `stop` (returns `false`).
async fn receive(
    listener: &mut PgListener,
    to: &Subscribers,
    metrics: &Metrics,
    stop: &mut watch::Receiver<bool>,
    changes: &mut Option<watch::Receiver<Option<Host>>>,
) -> bool {
    loop {
        let next = tokio::select! {
            biased;
            _ = stop.changed() => return false,
            _ = primary_changed(changes) => {
                tracing::info!("the database primary changed; the wake-up listener reconnects");
                return true;
            }
            next = listener.try_recv() => next,
        };
        match next {
            Ok(Some(n)) => to.deliver(&n, metrics),
            Ok(None) => {
                // The connection was lost (and re-established, LISTEN included): anything sent
                // meanwhile is gone, so look once.
                metrics.reconnect();
                tracing::info!("wake-up listener reconnected");
                to.gap();
            }
            Err(e) => {
                tracing::warn!(error = %e, "wake-up listener failed; reconnecting");
                return true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_permit_per_lane_however_many_wakeups() {
        let waker = Waker::new(2);
        for _ in 0..1_000 {
            waker.wake_all();
        }
        for i in 0..2 {
            let lane = waker.lane(i).unwrap_or_else(|| panic!("lane {i}"));
            // The stored permit makes the first wait return at once…
            tokio::time::timeout(Duration::from_millis(100), lane.notified())
                .await
                .unwrap_or_else(|_| panic!("lane {i} was not woken"));
            // …and there is only one.
            let second = tokio::time::timeout(Duration::from_millis(50), lane.notified()).await;
            assert!(second.is_err(), "lane {i} had a second permit");
        }
        assert!(waker.lane(2).is_none());
    }
}
