//! The `gateway` host: the launcher. In `ledger` mode (the default) an idempotent run ledger
//! (the same key yields the same run), 409 while a run is active on the thread, 404 for deleted
//! threads; in `langgraph` mode a simulated LangGraph Agent Server (module `langgraph`). Either
//! way a simulated agent runtime ends each run after a while — successfully unless a fault says
//! otherwise.

use crate::agent_server::AgentServer;
use crate::backend::Backend;
use crate::coverage::Feature;
use crate::ctx::{now_ms, timestamp, Ctx};
use crate::fault::{BadEnd, FaultKind, Service};
use crate::gateway_mode::GatewayMode;
use crate::generate::Stream;
use crate::history::{parse_key, Event, LaunchAnswer};
use crate::ledger_call::{LedgerAnswer, LedgerCall};
use crate::naming::task_number;
use crate::wire::gateway::{GatewayRequest, GatewayResponse};
use crate::wire::rpc::{serve, Reply};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tasklatch_core::ids::RunId;
use tasklatch_core::ports::{LaunchOutcome, RunRequest, RunStatus};

/// The gateway's own state (in ledger mode the ledger lives in the backend; in langgraph
/// mode the simulated server lives here, in memory, whatever the store).
pub struct GatewayState {
    known: BTreeSet<RunId>,
    pub(super) scheduled: BTreeSet<RunId>,
    pub(super) lost: BTreeSet<RunId>,
    /// Runs that ignore interrupts (a stubborn-runs fault was active at their start).
    pub(super) stubborn: BTreeSet<RunId>,
    rng: ChaCha8Rng,
    pub(super) replies: AtomicU64,
    /// `langgraph` mode: the simulated Agent Server.
    pub(super) server: AgentServer,
    /// Each run's key.
    pub(super) keys: BTreeMap<RunId, String>,
    /// Per doomed-version fault (by index): the (task id, version) it doomed, the first
    /// version of its task launched while it was active.
    doomed: BTreeMap<usize, (String, u64)>,
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

fn now_ts() -> tasklatch_core::time::Timestamp {
    timestamp(turmoil::sim_elapsed().unwrap_or_default(), 0)
}

/// The `gateway` host's software.
pub async fn host(
    ctx: Arc<Ctx>,
    backend: Backend,
    state: Arc<Mutex<GatewayState>>,
) -> turmoil::Result {
    serve(move |req: GatewayRequest| {
        let ctx = ctx.clone();
        let backend = backend.clone();
        let state = state.clone();
        async move { handle(ctx, backend, state, req).await }
    })
    .await
}

async fn handle(
    ctx: Arc<Ctx>,
    backend: Backend,
    state: Arc<Mutex<GatewayState>>,
    req: GatewayRequest,
) -> Reply<GatewayResponse> {
    if ctx.plan.gateway == GatewayMode::Langgraph {
        return super::langgraph::handle(ctx, state, req).await;
    }
    let t = now_ms();
    match req {
        GatewayRequest::Launch(run) => launch(&ctx, &backend, &state, run, t).await,
        GatewayRequest::Lookup(run) => {
            if let Some((index, ())) = ctx
                .active(t, |k| matches!(k, FaultKind::LookupErrors).then_some(()))
                .next()
            {
                ctx.fire(index, "gateway");
                return Reply::Send(GatewayResponse::Lookup(Err(
                    "gateway error 502 while reading the run".into(),
                )));
            }
            let lost = state
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .lost
                .contains(&run);
            if lost {
                return Reply::Send(GatewayResponse::Lookup(Ok(RunStatus::Missing)));
            }
            let answer = match backend.ledger(LedgerCall::Status(run)).await {
                LedgerAnswer::Status(r) => r.map_err(|e| e.to_string()),
                _ => Err("ledger answered out of turn".into()),
            };
            Reply::Send(GatewayResponse::Lookup(answer))
        }
        GatewayRequest::CreateThread(ref owner, ref thread) => {
            let (owner, thread) = (owner.to_string(), thread.to_string());
            let answer = backend
                .ledger(LedgerCall::CreateThread(req, now_ts()))
                .await;
            if matches!(answer, LedgerAnswer::Done(Ok(_))) {
                ctx.history
                    .record("gateway", None, Event::ThreadCreated { owner, thread });
            }
            Reply::Send(GatewayResponse::Done(done(answer)))
        }
        GatewayRequest::DeleteThread(_) => Reply::Send(GatewayResponse::Done(done(
            backend
                .ledger(LedgerCall::DeleteThread(req, now_ts()))
                .await,
        ))),
        GatewayRequest::InterruptRun { ref run, .. } if ignores_interrupt(&ctx, &state, run) => {
            Reply::Send(GatewayResponse::Done(Err(INTERRUPT_IGNORED.into())))
        }
        GatewayRequest::InterruptRun { run, .. } => {
            let answer = backend
                .ledger(LedgerCall::Finish(
                    run.clone(),
                    RunStatus::Interrupted,
                    now_ts(),
                ))
                .await;
            if matches!(answer, LedgerAnswer::Done(Ok(true))) {
                interrupted(&ctx, &state, &run);
            }
            Reply::Send(GatewayResponse::Done(done(answer)))
        }
        GatewayRequest::ListRuns { .. }
        | GatewayRequest::CreateRun { .. }
        | GatewayRequest::CancelRun { .. }
        | GatewayRequest::GetAssistant(_) => Reply::Send(GatewayResponse::Done(Err(
            "404: the ledger gateway has no such route".into(),
        ))),
    }
}

/// What the agent server answers an interrupt of a run that ignores it.
pub(super) const INTERRUPT_IGNORED: &str = "500: the run could not be interrupted";

/// Whether `run` ignores interrupts (a stubborn-runs fault was active at its start): the
/// interrupt fails and the run goes on to its scheduled, successful end. Shared by both
/// gateway modes.
pub(super) fn ignores_interrupt(ctx: &Ctx, state: &Mutex<GatewayState>, run: &RunId) -> bool {
    let stubborn = state
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .stubborn
        .contains(run);
    if stubborn {
        ctx.exercised(Feature::InterruptIgnoredRunWentOn, "gateway", None);
    }
    stubborn
}

/// A run the engine interrupted: it ends now (its scheduled end finds it ended and records
/// nothing) and no longer keeps the world from settling. Shared by both gateway modes.
pub(super) fn interrupted(ctx: &Ctx, state: &Mutex<GatewayState>, run: &RunId) {
    let key = {
        let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
        st.scheduled.remove(run);
        st.keys.get(run).cloned().unwrap_or_default()
    };
    ctx.exercised(Feature::LauncherInterruptedStuckRun, "gateway", None);
    record_end(ctx, run, &key, RunStatus::Interrupted);
}

/// Records that `run` (of `key`) ended with `status`.
fn record_end(ctx: &Ctx, run: &RunId, key: &str, status: RunStatus) {
    let event = Event::RunEnded {
        run: run.to_string(),
        key: key.to_owned(),
        status,
    };
    ctx.history.record_about("gateway", key, event);
}

fn done(answer: LedgerAnswer) -> Result<(), String> {
    match answer {
        LedgerAnswer::Done(r) => r.map(|_| ()).map_err(|e| e.to_string()),
        _ => Err("ledger answered out of turn".into()),
    }
}

/// A 409 window's plan index, and a 5xx window's index with whether it strikes after the insert.
type CreateFaults = (Option<(usize, ())>, Option<(usize, bool)>);

/// The faults a run create meets at `t`: a 409 window (its plan index) and a 5xx window (its
/// index, and whether it strikes after the insert). Shared by both gateway modes.
pub(crate) fn create_faults(ctx: &Ctx, t: u64) -> CreateFaults {
    let busy = ctx
        .active(t, |k| matches!(k, FaultKind::GatewayBusy).then_some(()))
        .next();
    let errors = ctx
        .active(t, |k| match k {
            FaultKind::GatewayErrors { after_commit } => Some(*after_commit),
            _ => None,
        })
        .next();
    (busy, errors)
}

async fn launch(
    ctx: &Arc<Ctx>,
    backend: &Backend,
    state: &Arc<Mutex<GatewayState>>,
    req: RunRequest,
    t: u64,
) -> Reply<GatewayResponse> {
    let (busy, errors) = create_faults(ctx, t);
    let mut created_run = None;
    let (answer, outcome) = if let Some((index, ())) = busy {
        ctx.fire(index, "gateway");
        (LaunchAnswer::Busy, LaunchOutcome::Busy)
    } else if let Some((index, false)) = errors {
        ctx.fire(index, "gateway");
        (
            LaunchAnswer::Error,
            LaunchOutcome::Unavailable("gateway error 503".into()),
        )
    } else {
        let (answer, outcome, created) = start(ctx, backend, state, &req, t).await;
        created_run = created;
        match (errors, &outcome) {
            (Some((index, true)), LaunchOutcome::Started(_)) => {
                ctx.fire(index, "gateway");
                (
                    LaunchAnswer::Error,
                    LaunchOutcome::Unavailable("gateway error 500 after accepting the run".into()),
                )
            }
            _ => (answer, outcome),
        }
    };
    let dropped = {
        let st = state.lock().unwrap_or_else(|p| p.into_inner());
        super::lose_reply(ctx, Service::Gateway, &st.replies)
    };
    ctx.history.record_about(
        "gateway",
        &req.key,
        Event::LaunchServed {
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
        Reply::Send(GatewayResponse::Launch(outcome))
    }
}

/// Starts (or finds) the run for the request's key in the ledger; a run new to the gateway is
/// scheduled to end, and returned as the created run.
async fn start(
    ctx: &Arc<Ctx>,
    backend: &Backend,
    state: &Arc<Mutex<GatewayState>>,
    req: &RunRequest,
    t: u64,
) -> (LaunchAnswer, LaunchOutcome, Option<String>) {
    let outcome = match backend
        .ledger(LedgerCall::Start(req.clone(), now_ts()))
        .await
    {
        LedgerAnswer::Launch(Ok(o)) => o,
        LedgerAnswer::Launch(Err(e)) => LaunchOutcome::Unavailable(e.to_string()),
        _ => LaunchOutcome::Failed("ledger answered out of turn".into()),
    };
    let mut created_run = None;
    let answer = match &outcome {
        LaunchOutcome::Started(run) => {
            let new = {
                let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
                let new = st.known.insert(run.clone()) && st.scheduled.insert(run.clone());
                if new {
                    st.keys.insert(run.clone(), req.key.clone());
                }
                new
            };
            if new {
                ctx.history.alias(run.as_str(), &req.key);
                let (ended, key) = (run.clone(), req.key.clone());
                let backend = Some(backend.clone());
                schedule_end(ctx.clone(), backend, state.clone(), ended, key, t);
                created_run = Some(run.to_string());
            }
            LaunchAnswer::Started {
                run: run.to_string(),
            }
        }
        LaunchOutcome::Busy => {
            ctx.exercised(Feature::Launcher409BusyThread, "gateway", None);
            LaunchAnswer::Busy
        }
        LaunchOutcome::ThreadGone => {
            ctx.exercised(Feature::Launcher404ThreadGone, "gateway", None);
            LaunchAnswer::Gone
        }
        LaunchOutcome::Failed(_) | LaunchOutcome::Unavailable(_) => LaunchAnswer::Error,
    };
    (answer, outcome, created_run)
}

/// Ends a new run after its duration, as the plan's faults at its start say: in the ledger of
/// `backend`, or (`None`, langgraph mode) in the simulated server, where a queued run first
/// waits for its turn and a run rolled back or deleted meanwhile ends unrecorded.
pub(super) fn schedule_end(
    ctx: Arc<Ctx>,
    backend: Option<Backend>,
    state: Arc<Mutex<GatewayState>>,
    run: RunId,
    key: String,
    t: u64,
) {
    let (run_ms, end) = match doomed(&ctx, &state, &key, t) {
        Some(run_ms) => (run_ms, RunStatus::Error),
        None => run_fate(&ctx, &state, &run, t),
    };
    tokio::task::spawn_local(async move {
        if backend.is_none() {
            super::langgraph::wait_turn(&state, &run).await;
        }
        tokio::time::sleep(Duration::from_millis(run_ms)).await;
        let ledger_end = if end == RunStatus::Missing {
            RunStatus::Interrupted
        } else {
            end
        };
        let ended = match &backend {
            // An interrupted run already ended; a failed finish is still this run's end.
            Some(backend) => !matches!(
                backend
                    .ledger(LedgerCall::Finish(run.clone(), ledger_end, now_ts()))
                    .await,
                LedgerAnswer::Done(Ok(false))
            ),
            None => state
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .server
                .finish(&run, ledger_end),
        };
        state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .scheduled
            .remove(&run);
        if !ended {
            return;
        }
        record_end(&ctx, &run, &key, end);
    });
}

/// How long a stuck run lasts unless interrupted: until the agent server's own run timeout
/// ends it (as `timeout`), long after the engine's `max_run_life`. A run the engine never
/// learned of (every launch answer for its key was lost) frees its thread only then.
pub const STUCK_RUN_MS: u64 = 240_000;

/// `Some(run_ms)` when a doomed-version fault active at `t` dooms the run of `key`: the
/// fault dooms the first version of its task it sees, and every run of that version fails
/// after `run_ms` while the fault lasts.
fn doomed(ctx: &Ctx, state: &Mutex<GatewayState>, key: &str, t: u64) -> Option<u64> {
    let (task_id, version, _) = parse_key(key)?;
    let n = ctx
        .history
        .label_of(task_id)
        .and_then(|label| task_number(&label))?;
    let faults = ctx.active(t, |k| match k {
        FaultKind::DoomedVersion { task, run_ms } if u64::from(*task) == n => Some(*run_ms),
        _ => None,
    });
    let faults: Vec<_> = faults.collect();
    let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
    for (index, run_ms) in faults {
        let doomed = st
            .doomed
            .entry(index)
            .or_insert_with(|| (task_id.to_owned(), version));
        if *doomed == (task_id.to_owned(), version) {
            ctx.fire(index, "gateway");
            return Some(run_ms);
        }
    }
    None
}

/// `Some(run_ms)` when a stubborn-runs fault active at `t` makes `run` ignore interrupts and
/// succeed after `run_ms`; the run is remembered as such.
fn stubborn(ctx: &Ctx, state: &Mutex<GatewayState>, run: &RunId, t: u64) -> Option<u64> {
    let (index, run_ms) = ctx
        .active(t, |k| match k {
            FaultKind::StubbornRuns { run_ms } => Some(*run_ms),
            _ => None,
        })
        .next()?;
    ctx.fire(index, "gateway");
    state
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .stubborn
        .insert(run.clone());
    Some(run_ms)
}

/// How long a run started at `t` takes and how it ends: slow and bad-run faults active at
/// its start decide, and a lost-runs fault makes the gateway forget it (it reads "missing").
fn run_fate(ctx: &Ctx, state: &Mutex<GatewayState>, run: &RunId, t: u64) -> (u64, RunStatus) {
    let slow = ctx.active(t, |k| match k {
        FaultKind::SlowRuns { run_ms } => Some(*run_ms),
        _ => None,
    });
    let slow: Vec<_> = slow.collect();
    let bad = ctx.active(t, |k| match k {
        FaultKind::BadRuns { end } => Some(*end),
        _ => None,
    });
    let bad: Vec<_> = bad.collect();
    let stuck = ctx
        .active(t, |k| matches!(k, FaultKind::StuckRuns).then_some(()))
        .next();
    if stuck.is_none() {
        if let Some(run_ms) = stubborn(ctx, state, run, t) {
            return (run_ms, RunStatus::Success);
        }
    }
    // A stuck run is never also forgotten: a run the gateway denies while it holds its thread
    // forever would leave the engine nothing to interrupt.
    let lost = ctx
        .active(t, |k| matches!(k, FaultKind::LostRuns).then_some(()))
        .next()
        .filter(|_| stuck.is_none());
    let run_ms = match (stuck, slow.first()) {
        (Some((index, ())), _) => {
            ctx.fire(index, "gateway");
            STUCK_RUN_MS
        }
        (None, Some((index, ms))) => {
            ctx.fire(*index, "gateway");
            *ms
        }
        (None, None) => state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .rng
            .random_range(500..3_000),
    };
    let end = match (lost, bad.first()) {
        _ if stuck.is_some() => RunStatus::Timeout,
        (Some((index, ())), _) => {
            ctx.fire(index, "gateway");
            state
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .lost
                .insert(run.clone());
            RunStatus::Missing
        }
        (None, Some((index, end))) => {
            ctx.fire(*index, "gateway");
            match end {
                BadEnd::Error => RunStatus::Error,
                BadEnd::Timeout => RunStatus::Timeout,
                BadEnd::Interrupted => RunStatus::Interrupted,
            }
        }
        (None, None) => RunStatus::Success,
    };
    (run_ms, end)
}
