//! One simulation run: build the turmoil world, drive the chaos phase (network faults and
//! crashes from the plan), heal, wait until everything settles, then check the history.

use crate::check::{self, Verdict};
use crate::history::{history_hash, Entry, Seen};
use crate::plan::fault::{Fault, FaultKind, Service};
use crate::plan::naming::{task_label, worker_host};
use crate::plan::timing::EPOCH_SECS;
use crate::plan::Plan;
use crate::run::backend::Backend;
use crate::run::ctx::Ctx;
use crate::run::hosts::gateway::GatewayState;
use crate::run::hosts::mcp::{view_at, McpState, RemoteTruth};
use crate::run::hosts::{db, gateway, mcp, user, worker};
use crate::wire::db::{StoreRequest, StoreResponse};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, UNIX_EPOCH};
use tasklatch_core::task::TaskRow;

/// How a run is set up (the plan says what happens; this says where and how fast).
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// The simulation tick.
    pub tick: Duration,
    /// After the chaos phase, how long everything may take to settle
    /// ([`crate::plan::timing::settle_bound`] of the simulated policy by default).
    pub liveness: Duration,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            tick: Duration::from_millis(10),
            liveness: crate::plan::timing::settle_bound(&crate::plan::timing::sim_policy()),
        }
    }
}

/// What one run produced.
pub struct RunOutcome {
    /// The history.
    pub entries: Vec<Entry>,
    /// sha256 of the trace.
    pub hash: String,
    /// The checker's verdict.
    pub verdict: Verdict,
    /// Simulated time the run took.
    pub sim_elapsed: Duration,
    /// Wall time the run took.
    pub wall: Duration,
}

/// Where a worker↔service link is: healthy, held, or partitioned (counts of active faults).
#[derive(Default, Clone, Copy, PartialEq, Eq)]
struct LinkFaults {
    partitions: u32,
    holds: u32,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum LinkState {
    Healthy,
    Held,
    Cut,
}

impl LinkFaults {
    fn state(self) -> LinkState {
        if self.partitions > 0 {
            LinkState::Cut
        } else if self.holds > 0 {
            LinkState::Held
        } else {
            LinkState::Healthy
        }
    }
}

/// Runs `plan` on `backend` and checks its history.
pub fn run(plan: &Plan, backend: Backend, opts: &RunOptions) -> RunOutcome {
    let wall = Instant::now();
    let ctx = Arc::new(Ctx::new(plan.clone()));
    let mcp_state = Arc::new(Mutex::new(McpState::new(plan.seed)));
    let gw_state = Arc::new(Mutex::new(GatewayState::new(plan.seed)));
    let mut sim = build(&ctx, &backend, &mcp_state, &gw_state, opts);
    let services = Services {
        backend: &backend,
        mcp: &mcp_state,
        gateway: &gw_state,
    };
    let end = drive(&mut sim, &ctx, &services, opts);
    let sim_elapsed = sim.elapsed();
    drop(sim);
    record_truths(&ctx, &mcp_state, sim_elapsed);
    let entries = ctx.history.entries();
    let hash = history_hash(&entries);
    let mut verdict = check::check(plan, &entries);
    match end {
        End::Settled => {}
        End::Stopped(f) => verdict.add_world_failure(f),
        End::Deadline => verdict.add_liveness_failure(opts.liveness),
    }
    RunOutcome {
        entries,
        hash,
        verdict,
        sim_elapsed,
        wall: wall.elapsed(),
    }
}

/// Records, at the end of the run, what a fault-free poll of each remote task would answer:
/// the checker expects the engine's last delivery to match it, not merely the last report the
/// server happened to serve.
fn record_truths(ctx: &Ctx, mcp: &Mutex<McpState>, elapsed: Duration) {
    let t_ms = elapsed.as_millis() as u64;
    let truths = mcp
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .truths(&ctx.plan, t_ms);
    for RemoteTruth {
        n,
        remote_id,
        answer,
        forgotten,
    } in truths
    {
        let event = Seen::RemoteTruth {
            remote_id,
            answer,
            forgotten,
        };
        let at_us = elapsed.as_micros() as u64;
        ctx.history
            .record_at(at_us, "mcp", Some(task_label(n)), event);
    }
}

/// The turmoil world of one run: fixed epoch and seed, and every host of the plan.
fn build<'a>(
    ctx: &Arc<Ctx>,
    backend: &Backend,
    mcp_state: &Arc<Mutex<McpState>>,
    gw_state: &Arc<Mutex<GatewayState>>,
    opts: &RunOptions,
) -> turmoil::Sim<'a> {
    let mut sim = turmoil::Builder::new()
        .epoch(UNIX_EPOCH + Duration::from_secs(EPOCH_SECS))
        .rng_seed(ctx.plan.seed)
        .tick_duration(opts.tick)
        .simulation_duration(Duration::from_secs(10 * 24 * 3600))
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(BASE_LATENCY)
        .build();
    let (c, b) = (ctx.clone(), backend.clone());
    sim.host("db", move || db::host(c.clone(), b.clone()));
    let (c, m) = (ctx.clone(), mcp_state.clone());
    sim.host("mcp", move || mcp::host(c.clone(), m.clone()));
    let (c, b, g) = (ctx.clone(), backend.clone(), gw_state.clone());
    sim.host("gateway", move || {
        gateway::host(c.clone(), b.clone(), g.clone())
    });
    let c = ctx.clone();
    sim.host("user", move || user::host(c.clone()));
    for w in 0..ctx.plan.workers {
        let c = ctx.clone();
        sim.host(worker_host(w), move || worker::host(c.clone(), w));
    }
    sim
}

/// The state the settle check compares.
struct Services<'a> {
    backend: &'a Backend,
    mcp: &'a Mutex<McpState>,
    gateway: &'a Mutex<GatewayState>,
}

/// How a run ended.
enum End {
    /// Everything settled.
    Settled,
    /// The liveness deadline passed first.
    Deadline,
    /// The simulation itself stopped (a host failed).
    Stopped(String),
}

/// Steps the world through the chaos phase (applying the plan's world faults), heals it, and
/// steps on until everything settles or the liveness deadline passes.
fn drive(sim: &mut turmoil::Sim<'_>, ctx: &Ctx, services: &Services<'_>, opts: &RunOptions) -> End {
    let plan = &ctx.plan;
    let mut driver = Driver::new(plan);
    let phase = |t_ms: u64, name: &str| {
        let event = Seen::Phase { name: name.into() };
        ctx.history.record_at(t_ms * 1000, "world", None, event);
    };
    let event = Seen::Plan {
        plan: Box::new(plan.clone()),
    };
    ctx.history.record_at(0, "world", None, event);
    phase(0, "chaos");
    let mut healed = false;
    let mut next_check = plan.chaos_ms;
    let deadline = plan.chaos_ms + opts.liveness.as_millis() as u64;
    loop {
        let t = sim.elapsed().as_millis() as u64;
        driver.apply_until(t, sim, ctx);
        if !healed && t >= plan.chaos_ms {
            driver.heal(sim, ctx);
            phase(t, "heal");
            healed = true;
        }
        if healed && t >= next_check {
            next_check = t + 2_000;
            if is_settled(ctx, services.backend, services.mcp, services.gateway, t) {
                phase(t, "settled");
                return End::Settled;
            }
            if t > deadline {
                return End::Deadline;
            }
        }
        if let Err(e) = sim.step() {
            return End::Stopped(format!("the simulation stopped: {e}"));
        }
        record_row_rules_broken(ctx);
    }
}

/// Moves the row rules the engine found broken during the last step (only while a planted bug
/// is active) into the history, so the mutant table can tell which saw the bug first: the
/// in-code rule or the checker.
fn record_row_rules_broken(ctx: &Ctx) {
    for breach in tasklatch_core::mutation::take_invariant_breaches() {
        let task = ctx.history.label_of(&breach.task);
        let rule = format!("{:?}", breach.rule);
        ctx.history
            .record("engine", task, Seen::RowRuleBroken { rule });
    }
}

/// Message latency outside latency faults.
const BASE_LATENCY: Duration = Duration::from_millis(15);

/// Applies the plan's network faults and crashes as simulated time passes.
struct Driver {
    /// (time, fault index, starts?) in time order.
    changes: Vec<(u64, usize, bool)>,
    next: usize,
    links: BTreeMap<(u32, Service), LinkFaults>,
    applied: BTreeMap<(u32, Service), LinkState>,
    crashed: BTreeMap<u32, u32>,
    latency: BTreeMap<usize, u64>,
    faults: Vec<Fault>,
}

impl Driver {
    fn new(plan: &Plan) -> Self {
        let mut changes = Vec::new();
        for (i, f) in plan.faults.iter().enumerate() {
            if matches!(
                f.kind,
                FaultKind::Crash { .. }
                    | FaultKind::Partition { .. }
                    | FaultKind::Hold { .. }
                    | FaultKind::Latency { .. }
            ) {
                let start = f.at_ms.min(plan.chaos_ms);
                let end = (f.at_ms + f.for_ms).min(plan.chaos_ms);
                if start < end {
                    changes.push((start, i, true));
                    changes.push((end, i, false));
                }
            }
        }
        changes.sort_by_key(|(t, i, start)| (*t, !*start, *i));
        Driver {
            changes,
            next: 0,
            links: BTreeMap::new(),
            applied: BTreeMap::new(),
            crashed: BTreeMap::new(),
            latency: BTreeMap::new(),
            faults: plan.faults.clone(),
        }
    }

    fn apply_until(&mut self, t: u64, sim: &mut turmoil::Sim<'_>, ctx: &Ctx) {
        while let Some(&(at, index, start)) = self.changes.get(self.next) {
            if at > t {
                break;
            }
            self.next += 1;
            self.change(index, start, sim, ctx, at);
        }
    }

    fn change(
        &mut self,
        index: usize,
        start: bool,
        sim: &mut turmoil::Sim<'_>,
        ctx: &Ctx,
        at: u64,
    ) {
        let delta = |n: &mut u32| {
            if start {
                *n += 1
            } else {
                *n = n.saturating_sub(1)
            }
        };
        let event = if start {
            Seen::FaultStarted { index }
        } else {
            Seen::FaultEnded { index }
        };
        ctx.history.record_at(at * 1000, "world", None, event);
        if start {
            ctx.fire_at(index, "world", at * 1000);
        }
        match self.faults[index].kind {
            FaultKind::Crash { worker } => {
                let n = self.crashed.entry(worker).or_default();
                let was = *n;
                delta(n);
                match (was, *n) {
                    (0, 1) => sim.crash(worker_host(worker)),
                    (1, 0) => sim.bounce(worker_host(worker)),
                    _ => {}
                }
            }
            FaultKind::Partition { worker, service } => {
                delta(&mut self.links.entry((worker, service)).or_default().partitions);
                self.sync_link(worker, service, sim);
            }
            FaultKind::Hold { worker, service } => {
                delta(&mut self.links.entry((worker, service)).or_default().holds);
                self.sync_link(worker, service, sim);
            }
            FaultKind::Latency { max_ms } => {
                if start {
                    self.latency.insert(index, max_ms);
                } else {
                    self.latency.remove(&index);
                }
                let max = self
                    .latency
                    .values()
                    .copied()
                    .max()
                    .map_or(BASE_LATENCY, Duration::from_millis);
                sim.set_max_message_latency(max.max(BASE_LATENCY));
            }
            _ => {}
        }
    }

    fn sync_link(&mut self, worker: u32, service: Service, sim: &mut turmoil::Sim<'_>) {
        let want = self
            .links
            .get(&(worker, service))
            .copied()
            .unwrap_or_default()
            .state();
        let have = self
            .applied
            .get(&(worker, service))
            .copied()
            .unwrap_or(LinkState::Healthy);
        if want == have {
            return;
        }
        let (a, b) = (worker_host(worker), service.host());
        match have {
            LinkState::Held => sim.release(a.as_str(), b),
            LinkState::Cut => sim.repair(a.as_str(), b),
            LinkState::Healthy => {}
        }
        match want {
            LinkState::Held => sim.hold(a.as_str(), b),
            LinkState::Cut => sim.partition(a.as_str(), b),
            LinkState::Healthy => {}
        }
        self.applied.insert((worker, service), want);
    }

    /// Ends every fault: links healthy, crashed workers restarted, latency back to normal.
    fn heal(&mut self, sim: &mut turmoil::Sim<'_>, ctx: &Ctx) {
        self.apply_until(u64::MAX, sim, ctx);
    }
}

/// Whether the run has settled: users are done, no run is active, and every stored task is
/// quiet and agrees with the remote server (or is terminal): same status, last observed
/// after the heal, and the remote's state has not changed since (a second question of the
/// same status is a change). A task whose cancel was dead-lettered or only acknowledged is no
/// exception: it must still be polled to the remote's true state, so a task left unwatched
/// never settles (and the liveness deadline reports it).
fn is_settled(
    ctx: &Ctx,
    backend: &Backend,
    mcp: &Mutex<McpState>,
    gw: &Mutex<GatewayState>,
    t: u64,
) -> bool {
    if !ctx.user_done() || gw.lock().unwrap_or_else(|p| p.into_inner()).active_runs() > 0 {
        return false;
    }
    let rows = match backend.store_now(StoreRequest::AdminRows(None, 1_000_000)) {
        StoreResponse::Rows(Ok(rows)) => rows,
        _ => return false,
    };
    let heal_us = crate::run::ctx::timestamp(Duration::from_millis(ctx.plan.chaos_ms), 0);
    let mcp = mcp.lock().unwrap_or_else(|p| p.into_inner());
    rows.iter().all(|row: &TaskRow| {
        if !row.is_quiet() {
            return false;
        }
        if row.remote.status.is_terminal() {
            return true;
        }
        let Some(task) = mcp.task(row.identity.handle.remote_task_id.expose()) else {
            return false;
        };
        let Some(plan) = ctx.plan.task(task.n) else {
            return false;
        };
        let now = view_at(task, plan, t);
        let Some(observed) = row.remote.observed_at.filter(|o| *o >= heal_us) else {
            return false;
        };
        let observed_ms = (observed.as_micros() - EPOCH_SECS as i64 * 1_000_000) / 1_000;
        let unchanged = view_at(task, plan, observed_ms as u64) == now;
        now.status() == Some(row.remote.status.as_str()) && unchanged
    })
}
