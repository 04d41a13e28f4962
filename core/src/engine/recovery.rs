//! Recovery without waiting out a backoff (DOMAIN §4): the engine remembers which MCP servers
//! its polls found unavailable. While a server stays so, one of its backed-off tasks is made
//! due every `policy.outage_probe_interval` (a probe, whatever the backoff of the rest); the
//! first poll it answers again brings every backed-off task of that server forward,
//! [`RECOVERY_SPACING`] apart, in pages of [`MAX_BATCH`] — a bounded rate, so the server is not
//! stampeded — at most once per probe interval, so that a task failing on its own while the
//! rest of its server answers is polled at that interval, not at every pass.
//!
//! The lanes of one worker share the memory ([`OutageMemory`], [`Engine::sharing_outages`]):
//! what one lane's polls saw holds for all, and one lane brings a server's tasks forward. The
//! same memory keeps when a notification run last succeeded, which decides a last attempt
//! before a budget dead letter ([`super::last_attempt`]).
//! The memory is advisory: a worker that restarts forgets it, and its tasks then wait out
//! their backoff (capped by `max_poll_backoff`) until a poll fails or answers again. Several
//! workers each probe (one poll per server per interval each) and each bring the same tasks
//! forward; a task is only ever moved earlier, to the same spread, so they do not add up.

use super::Engine;
use crate::ids::ServerId;
use crate::policy::MAX_BATCH;
use crate::ports::{Clock, Driver, Launcher};
use crate::store::{PollSooner, Store};
use crate::time::Timestamp;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The gap between two polls brought forward after a server answers again (10 per second).
pub const RECOVERY_SPACING: Duration = Duration::from_millis(100);
/// Pages brought forward per recovery at most (beyond them, the backoff of the rest stands).
const MAX_RECOVERY_PAGES: u32 = 10;

/// What the engine's polls last saw of a server.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(super) enum ServerHealth {
    /// Unavailable; probed last at this time.
    Down { probed_at: Timestamp },
    /// Answered again after being down: its backed-off tasks are to be brought forward.
    Back,
}

/// Per server, what the polls saw (only servers that were unavailable are listed), and when
/// each server's backed-off tasks were last brought forward; and when a notification run was
/// last seen succeeding ([`super::last_attempt`]).
#[derive(Default)]
struct Servers {
    health: BTreeMap<ServerId, ServerHealth>,
    recovered_at: BTreeMap<ServerId, Timestamp>,
    run_succeeded_at: Option<Timestamp>,
}

/// What an engine's polls saw of the MCP servers; clones share it, so that the lanes of one
/// worker hold one view (a lane never sends an answer into an outage another lane saw, nor
/// waits for its own poll to learn that a server is back).
#[derive(Clone, Default)]
pub struct OutageMemory(Arc<Mutex<Servers>>);

impl OutageMemory {
    fn lock(&self) -> MutexGuard<'_, Servers> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records that a notification run was seen succeeding at `now` (the latest time wins).
    pub(super) fn note_run_success(&self, now: Timestamp) {
        let mut servers = self.lock();
        servers.run_succeeded_at = servers.run_succeeded_at.max(Some(now));
    }

    /// When a notification run was last seen succeeding, if one was.
    pub(super) fn run_succeeded_at(&self) -> Option<Timestamp> {
        self.lock().run_succeeded_at
    }
}

impl<S: Store, D: Driver, L: Launcher, C: Clock> Engine<S, D, L, C> {
    /// The same engine, keeping what its polls see of the servers in `memory` (shared with
    /// the other engines given the same memory) instead of a memory of its own.
    pub fn sharing_outages(mut self, memory: OutageMemory) -> Self {
        self.servers = memory;
        self
    }

    /// Records what a poll of `server` found: `answered` (any answer of the server) or not.
    pub(super) fn poll_saw(&self, server: &ServerId, answered: bool, now: Timestamp) {
        let mut servers = self.servers.lock();
        match (servers.health.get(server).copied(), answered) {
            (Some(ServerHealth::Down { .. }), true) => {
                servers.health.insert(server.clone(), ServerHealth::Back);
            }
            (None | Some(ServerHealth::Back), false) => {
                let down = ServerHealth::Down { probed_at: now };
                servers.health.insert(server.clone(), down);
            }
            _ => {}
        }
    }

    /// Whether the last poll of `server` found it unavailable (and none has answered since).
    pub(super) fn server_down(&self, server: &ServerId) -> bool {
        let servers = self.servers.lock();
        matches!(servers.health.get(server), Some(ServerHealth::Down { .. }))
    }

    /// After a poll pass: brings forward the backed-off tasks of the servers that answered
    /// again, and probes the servers still down whose probe is due.
    pub(super) async fn recover_servers(&self) {
        let now = self.clock.now();
        let every = self.policy.outage_probe_interval;
        let (back, probes) = {
            let mut guard = self.servers.lock();
            let servers = &mut *guard;
            // A server is brought forward at most once per probe interval: one task failing
            // on its own while the rest answer must not be polled every pass.
            let back: Vec<ServerId> = servers
                .health
                .iter()
                .filter(|(s, h)| {
                    **h == ServerHealth::Back
                        && servers
                            .recovered_at
                            .get(*s)
                            .is_none_or(|t| now.since(*t) >= every)
                })
                .map(|(s, _)| s.clone())
                .collect();
            for server in &back {
                servers.recovered_at.insert(server.clone(), now);
            }
            servers
                .health
                .retain(|s, h| *h != ServerHealth::Back || !back.contains(s));
            let mut probes = Vec::new();
            for (server, health) in servers.health.iter_mut() {
                if let ServerHealth::Down { probed_at } = health {
                    if now.since(*probed_at) >= every {
                        *probed_at = now;
                        probes.push(server.clone());
                    }
                }
            }
            (back, probes)
        };
        for server in back {
            self.bring_forward(server, now).await;
        }
        for server in probes {
            let req = self.sooner(server, now, 1);
            if let Err(e) = self.store.poll_sooner(req).await {
                tracing::debug!(error = %e, "the probe of an unavailable server was not scheduled");
            }
        }
    }

    /// Brings `server`'s backed-off tasks forward from `now`, page after page.
    async fn bring_forward(&self, server: ServerId, now: Timestamp) {
        let mut req = self.sooner(server.clone(), now, MAX_BATCH);
        let mut moved = 0;
        for _ in 0..MAX_RECOVERY_PAGES {
            match self.store.poll_sooner(req.clone()).await {
                Ok(done) => {
                    moved += done.moved;
                    if done.selected < MAX_BATCH as u64 {
                        break;
                    }
                }
                Err(e) => {
                    tracing::warn!(server = %server, error = %e, "could not bring the server's backed-off polls forward; they wait out their backoff");
                    break;
                }
            }
            req.from = req
                .from
                .plus(RECOVERY_SPACING.saturating_mul(MAX_BATCH as u32));
        }
        let spacing_ms = RECOVERY_SPACING.as_millis() as u64;
        if moved > 0 {
            tracing::info!(server = %server, tasks = moved, spacing_ms, "the MCP server answers again: its backed-off tasks are polled now, spread");
        } else {
            tracing::debug!(server = %server, "the MCP server answers again: no task was backed off");
        }
    }

    fn sooner(&self, server: ServerId, now: Timestamp, limit: usize) -> PollSooner {
        PollSooner {
            server: Some(server),
            backed_off_only: true,
            now,
            from: now,
            spacing: RECOVERY_SPACING,
            limit,
        }
    }
}
