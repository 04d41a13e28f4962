//! The gateway's state and what both gateway modes do alike: the runs it started, reads and
//! creates failed by the plan's faults, interrupts (ignored by stubborn runs), run ends, and
//! the tail of a served launch.

use crate::history::{LaunchAnswer, Seen};
use crate::plan::fault::{FaultKind, Service};
use crate::plan::gateway_mode::GatewayMode;
use crate::plan::generate::Stream;
use crate::plan::WorkloadMark;
use crate::run::agent_server::AgentServer;
use crate::run::ctx::{now_ms, timestamp, Ctx};
use crate::run::hosts::lost_replies::lose_reply;
use crate::wire::gateway::GatewayResponse;
use crate::wire::rpc::Reply;
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::AtomicU64;
use std::sync::{Mutex, MutexGuard};
use tasklatch_core::ids::RunId;
use tasklatch_core::ports::{RunRequest, RunStatus};
use tasklatch_core::time::Timestamp;

/// The gateway's own state (in ledger mode the ledger lives in the backend; in langgraph
/// mode the simulated server lives here, in memory, whatever the store).
pub struct GatewayState {
    /// Ledger mode: every run a launch started (a launch finding one again starts nothing).
    pub(super) known: BTreeSet<RunId>,
    /// Runs started and not yet ended.
    pub(super) scheduled: BTreeSet<RunId>,
    /// Runs the gateway forgot (a lost-runs fault at their start): they read "missing".
    pub(super) lost: BTreeSet<RunId>,
    /// Runs that ignore interrupts (a stubborn-runs fault was active at their start).
    pub(super) stubborn: BTreeSet<RunId>,
    /// Draws how long a run without faults takes.
    pub(super) rng: ChaCha8Rng,
    /// Replies served, counted for lost-replies faults.
    pub(super) replies: AtomicU64,
    /// First creates of a key, counted for lost-create-acks faults.
    pub(super) first_creates: u64,
    /// `langgraph` mode: runs whose create reply a lost-create-acks fault dropped, missing from
    /// the next listing of their thread (which takes them out of here).
    pub(super) unlisted: BTreeSet<RunId>,
    /// `langgraph` mode: the simulated Agent Server.
    pub(super) server: AgentServer,
    /// Each run's key.
    pub(super) keys: BTreeMap<RunId, String>,
    /// Per doomed-version fault (by index): the (task id, version) it doomed, the first
    /// version of its task launched while it was active.
    pub(super) doomed: BTreeMap<usize, (String, u64)>,
}

impl GatewayState {
    /// A gateway seeded from the plan.
    pub fn new(seed: u64) -> Self {
        GatewayState {
            known: BTreeSet::new(),
            scheduled: BTreeSet::new(),
            lost: BTreeSet::new(),
            stubborn: BTreeSet::new(),
            rng: Stream::GatewayHost.rng(seed),
            replies: AtomicU64::new(0),
            first_creates: 0,
            unlisted: BTreeSet::new(),
            server: AgentServer::default(),
            keys: BTreeMap::new(),
            doomed: BTreeMap::new(),
        }
    }

    /// Runs started and not yet ended.
    pub fn active_runs(&self) -> usize {
        self.scheduled.len()
    }
}

/// The gateway's state, locked (a poisoned lock is taken over: the state stays consistent).
pub(super) fn lock(state: &Mutex<GatewayState>) -> MutexGuard<'_, GatewayState> {
    state.lock().unwrap_or_else(|p| p.into_inner())
}

/// The world's simulated time as a timestamp (the ledger's clock).
pub(super) fn now_ts() -> Timestamp {
    timestamp(turmoil::sim_elapsed().unwrap_or_default(), 0)
}

/// Whether a `lookup_errors` fault active at `t` fails this read of runs.
pub(super) fn read_fails(ctx: &Ctx, t: u64) -> bool {
    match ctx
        .active(t, |k| matches!(k, FaultKind::LookupErrors).then_some(()))
        .next()
    {
        Some((index, ())) => {
            ctx.fire(index, "gateway");
            true
        }
        None => false,
    }
}

/// The faults a run create meets.
pub(super) struct CreateFaults {
    /// A 409 window's plan index.
    pub(super) busy: Option<usize>,
    /// A 5xx window's plan index, and whether it strikes after the insert.
    pub(super) errors: Option<(usize, bool)>,
}

/// The faults a run create meets at `t`: a 409 window and a 5xx window, if active.
pub(super) fn create_faults(ctx: &Ctx, t: u64) -> CreateFaults {
    let busy = ctx
        .active(t, |k| matches!(k, FaultKind::GatewayBusy).then_some(()))
        .next()
        .map(|(index, ())| index);
    let errors = ctx
        .active(t, |k| match k {
            FaultKind::GatewayErrors { after_commit } => Some(*after_commit),
            _ => None,
        })
        .next();
    CreateFaults { busy, errors }
}

/// The tail of a served launch (a ledger launch or a LangGraph create): a lost-replies fault
/// may drop `response`, else a lost-create-acks fault the reply of a key's first run (the run
/// exists either way), and the launch of `req` is recorded as served — its `answer`, the run
/// it created, whether the reply was dropped.
pub(super) fn serve_launch(
    ctx: &Ctx,
    state: &Mutex<GatewayState>,
    req: &RunRequest,
    answer: LaunchAnswer,
    created_run: Option<String>,
    response: GatewayResponse,
) -> Reply<GatewayResponse> {
    let lost = lose_reply(ctx, Service::Gateway, &lock(state).replies);
    let dropped = lost || created_run.is_some() && create_ack_lost(ctx, state, req);
    ctx.history.record_about(
        "gateway",
        &req.key,
        Seen::LaunchServed {
            key: req.key.clone(),
            owner: req.owner.to_string(),
            thread: req.thread.to_string(),
            prompt: req.prompt.clone(),
            answer,
            created_run,
            dropped,
        },
    );
    if dropped {
        Reply::Drop
    } else {
        Reply::Send(response)
    }
}

/// How long after a dropped create reply no fault that can leave a create unconfirmed
/// ([`FaultKind::leaves_create_unconfirmed`]) may be in force for the drop to happen: the
/// retries of the key and their second looks fall within it.
const QUIET_AFTER_DROP_MS: u64 = 30_000;

/// Whether a lost-create-acks fault drops the reply of the run a launch of `req` just created:
/// only a key's first run counts (every `one_in`-th while the fault is active), and only while
/// no fault that can leave a create unconfirmed is in force now or within
/// [`QUIET_AFTER_DROP_MS`]. Either would let the key's next run — created by a look the stale
/// listing misled — go unseen until it ended: a duplicate no launcher can prevent once a
/// listing may miss a run. In `langgraph` mode the dropped run is also left out of the next
/// listing of its thread.
fn create_ack_lost(ctx: &Ctx, state: &Mutex<GatewayState>, req: &RunRequest) -> bool {
    let t = now_ms();
    let Some((index, one_in)) = ctx
        .active(t, |k| match k {
            FaultKind::LostCreateAcks { one_in } => Some(*one_in),
            _ => None,
        })
        .next()
    else {
        return false;
    };
    let threatened = ctx.faults().iter().any(|f| {
        f.kind.leaves_create_unconfirmed()
            && f.at_ms < t + QUIET_AFTER_DROP_MS
            && t < f.at_ms + f.for_ms
    });
    if threatened {
        return false;
    }
    let mut st = lock(state);
    let runs: Vec<&RunId> = st
        .keys
        .iter()
        .filter(|(_, key)| **key == req.key)
        .map(|(run, _)| run)
        .collect();
    let [run] = runs[..] else {
        return false;
    };
    let run = run.clone();
    st.first_creates += 1;
    if st.first_creates % u64::from(one_in.max(1)) != 0 {
        return false;
    }
    if ctx.plan.gateway == GatewayMode::Langgraph {
        st.unlisted.insert(run);
    }
    drop(st);
    ctx.fire(index, "gateway");
    true
}

/// What the agent server answers an interrupt of a run that ignores it.
pub(super) const INTERRUPT_IGNORED: &str = "500: the run could not be interrupted";

/// Whether `run` ignores interrupts (a stubborn-runs fault was active at its start): the
/// interrupt fails and the run goes on to its scheduled, successful end.
pub(super) fn ignores_interrupt(ctx: &Ctx, state: &Mutex<GatewayState>, run: &RunId) -> bool {
    let stubborn = lock(state).stubborn.contains(run);
    if stubborn {
        ctx.exercised(WorkloadMark::InterruptIgnoredRunWentOn, "gateway", None);
    }
    stubborn
}

/// A run the engine interrupted: it ends now (its scheduled end finds it ended and records
/// nothing) and no longer keeps the world from settling.
pub(super) fn interrupted(ctx: &Ctx, state: &Mutex<GatewayState>, run: &RunId) {
    let key = {
        let mut st = lock(state);
        st.scheduled.remove(run);
        st.keys.get(run).cloned().unwrap_or_default()
    };
    ctx.exercised(WorkloadMark::LauncherInterruptedStuckRun, "gateway", None);
    record_end(ctx, run, &key, RunStatus::Interrupted);
}

/// Records that `run` (of `key`) ended with `status`.
pub(super) fn record_end(ctx: &Ctx, run: &RunId, key: &str, status: RunStatus) {
    let event = Seen::RunEnded {
        run: run.to_string(),
        key: key.to_owned(),
        status,
    };
    ctx.history.record_about("gateway", key, event);
}
