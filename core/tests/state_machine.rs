//! A proptest state machine over `MemStore`: random sequences of submits, claims by three
//! workers of every lease kind, time, poll results, notification and cancel steps (engine
//! rules emulated: the budget is checked before acting), stale writes, releases and cancel
//! requests. After every step every row is checked against DOMAIN §2–§6.
//!
//! The reference model only bounds the number of tasks; the checks compare each row with its
//! previous version and with the leases the test handed out (a token older than the newest one
//! issued for that row and loop is stale, whatever the row says).

mod support;

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use proptest::sample::Index;
use proptest_state_machine::{prop_state_machine, ReferenceStateMachine, StateMachineTest};
use support::{identity, ready, report, secs, T0};
use tasklatch_core::event::Event;
use tasklatch_core::identity::Identity;
use tasklatch_core::ids::{RunId, TaskId};
use tasklatch_core::lease::{Lease, LeaseKind};
use tasklatch_core::mem_store::MemStore;
use tasklatch_core::policy::{Policy, CANCEL_BUDGET, FAILURE_BUDGET};
use tasklatch_core::remote::{ErrorClass, PollError};
use tasklatch_core::snapshot::{validate, ProtocolError, RemoteReport};
use tasklatch_core::status::{CancelStatus, DeadLetterReason, NotifyStatus, RemoteStatus};
use tasklatch_core::store::{
    CancelOutcome, CancelTarget, CancelWrite, ClaimRequest, Claimed, NotifyWrite, PollWrite,
    Release, Scope, Store, WriteOutcome,
};
use tasklatch_core::task::{Outbox, TaskRow};
use tasklatch_core::time::Timestamp;
use tasklatch_core::transitions::cancel::CancelAction;
use tasklatch_core::transitions::outbox::NotifyAction;
use tasklatch_core::transitions::poll::{on_failure, on_report, PollUpdate};
use tasklatch_core::transitions::submit::new_row;

const MAX_TASKS: usize = 3;
const WORKERS: [&str; 3] = ["w0", "w1", "w2"];
const LEASE_FOR: u64 = 30;

/// Short timings, so that a sequence of a few dozen steps sees many rows come due again.
fn policy() -> Policy {
    Policy {
        poll_interval: secs(5),
        max_poll_backoff: secs(60),
        run_check_interval: secs(2),
        // the model launches into `dispatched`; the in-claim confirmation has its own tests
        run_confirm_wait: secs(0),
        retry_base: secs(1),
        max_retry_backoff: secs(4),
        release_backoff: secs(1),
        ..Policy::default()
    }
}

// ------------------------------------------------------------------------------------------
// operations
// ------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
enum First {
    NoReport,
    Working,
    InputRequired,
    Completed,
    Failed,
}

#[derive(Clone, Copy, Debug)]
enum PollResult {
    /// The same state the claim saw (a re-poll of an unchanged state).
    Same,
    Working,
    InputRequired(u8),
    Completed(u8),
    Failed,
    /// A transient error; the text varies, the class is what matters.
    Transient(ErrorClass, u8),
    /// A report about another task.
    Protocol,
}

#[derive(Clone, Copy, Debug)]
enum Launch {
    Launched,
    Busy,
    ThreadGone,
    Failed,
    Unavailable,
}

#[derive(Clone, Copy, Debug)]
enum RunOutcome {
    Succeeded,
    Failed,
    Pending,
    LookupUnavailable,
}

#[derive(Clone, Copy, Debug)]
enum CancelResult {
    Cancelled,
    FinishedFirst,
    Failed(u8),
    Unavailable(u8),
}

/// Which claim a write presents: one taken right now by a worker, the newest of its kind, or
/// any earlier one (often stale).
#[derive(Clone, Copy, Debug)]
enum Pick {
    Fresh(usize),
    Latest,
    Any(Index),
}

#[derive(Clone, Debug)]
enum Op {
    Submit {
        first: First,
        bob: bool,
    },
    Claim {
        kind: LeaseKind,
        worker: usize,
    },
    Advance {
        secs: u64,
    },
    /// A poll result; `early`: the remote call completed up to 5 s before the write.
    Poll {
        pick: Pick,
        result: PollResult,
        early: bool,
    },
    Notify {
        pick: Pick,
        launch: Launch,
        run: RunOutcome,
    },
    Cancel {
        pick: Pick,
        result: CancelResult,
    },
    Release {
        kind: LeaseKind,
        pick: Pick,
        error: bool,
    },
    RequestCancel {
        task: usize,
        foreign: bool,
    },
}

fn kind() -> impl Strategy<Value = LeaseKind> {
    prop_oneof![
        Just(LeaseKind::Poll),
        Just(LeaseKind::Notify),
        Just(LeaseKind::Cancel)
    ]
}

fn pick() -> impl Strategy<Value = Pick> {
    prop_oneof![
        4 => (0..WORKERS.len()).prop_map(Pick::Fresh),
        2 => Just(Pick::Latest),
        2 => any::<Index>().prop_map(Pick::Any)
    ]
}

fn class() -> impl Strategy<Value = ErrorClass> {
    prop_oneof![
        Just(ErrorClass::Timeout),
        Just(ErrorClass::Connection),
        Just(ErrorClass::Server),
        Just(ErrorClass::RateLimited),
        Just(ErrorClass::Malformed)
    ]
}

fn first() -> impl Strategy<Value = First> {
    prop_oneof![
        2 => Just(First::NoReport),
        2 => Just(First::Working),
        2 => Just(First::InputRequired),
        1 => Just(First::Completed),
        1 => Just(First::Failed)
    ]
}

fn poll_result() -> impl Strategy<Value = PollResult> {
    prop_oneof![
        3 => Just(PollResult::Same),
        3 => Just(PollResult::Working),
        3 => (0u8..2).prop_map(PollResult::InputRequired),
        1 => (0u8..2).prop_map(PollResult::Completed),
        1 => Just(PollResult::Failed),
        4 => (class(), any::<u8>()).prop_map(|(c, t)| PollResult::Transient(c, t)),
        1 => Just(PollResult::Protocol),
    ]
}

fn launch() -> impl Strategy<Value = Launch> {
    prop_oneof![
        3 => Just(Launch::Launched),
        2 => Just(Launch::Busy),
        1 => Just(Launch::ThreadGone),
        5 => Just(Launch::Failed),
        3 => Just(Launch::Unavailable)
    ]
}

fn run_outcome() -> impl Strategy<Value = RunOutcome> {
    prop_oneof![
        2 => Just(RunOutcome::Succeeded),
        5 => Just(RunOutcome::Failed),
        1 => Just(RunOutcome::Pending),
        2 => Just(RunOutcome::LookupUnavailable)
    ]
}

fn cancel_result() -> impl Strategy<Value = CancelResult> {
    prop_oneof![
        2 => Just(CancelResult::Cancelled),
        1 => Just(CancelResult::FinishedFirst),
        3 => any::<u8>().prop_map(CancelResult::Failed),
        2 => any::<u8>().prop_map(CancelResult::Unavailable)
    ]
}

// ------------------------------------------------------------------------------------------
// reference model: only how many tasks exist
// ------------------------------------------------------------------------------------------

struct Model;

#[derive(Clone, Debug)]
struct ModelState {
    tasks: usize,
}

impl ReferenceStateMachine for Model {
    type State = ModelState;
    type Transition = Op;

    fn init_state() -> BoxedStrategy<ModelState> {
        Just(ModelState { tasks: 0 }).boxed()
    }

    fn transitions(state: &ModelState) -> BoxedStrategy<Op> {
        let submit = (first(), any::<bool>()).prop_map(|(first, bob)| Op::Submit { first, bob });
        if state.tasks == 0 {
            return submit.boxed();
        }
        prop_oneof![
            1 => submit,
            3 => (kind(), 0..WORKERS.len()).prop_map(|(kind, worker)| Op::Claim { kind, worker }),
            5 => prop_oneof![3 => 1u64..12, 1 => 12u64..45].prop_map(|secs| Op::Advance { secs }),
            5 => (pick(), poll_result(), any::<bool>())
                .prop_map(|(pick, result, early)| Op::Poll { pick, result, early }),
            6 => (pick(), launch(), run_outcome())
                .prop_map(|(pick, launch, run)| Op::Notify { pick, launch, run }),
            2 => (pick(), cancel_result()).prop_map(|(pick, result)| Op::Cancel { pick, result }),
            2 => (kind(), pick(), any::<bool>())
                .prop_map(|(kind, pick, error)| Op::Release { kind, pick, error }),
            1 => (0..MAX_TASKS, any::<bool>())
                .prop_map(|(task, foreign)| Op::RequestCancel { task, foreign }),
        ]
        .boxed()
    }

    fn preconditions(state: &ModelState, op: &Op) -> bool {
        match op {
            Op::Submit { .. } => state.tasks < MAX_TASKS,
            _ => state.tasks > 0,
        }
    }

    fn apply(mut state: ModelState, op: &Op) -> ModelState {
        if let Op::Submit { .. } = op {
            state.tasks += 1;
        }
        state
    }
}

// ------------------------------------------------------------------------------------------
// system under test
// ------------------------------------------------------------------------------------------

struct Sut {
    store: MemStore,
    policy: Policy,
    now: Timestamp,
    tasks: Vec<(TaskId, Scope)>,
    claims: Vec<(LeaseKind, Claimed)>,
    /// The newest token issued per (task, loop).
    newest: BTreeMap<(TaskId, LeaseKind), u64>,
    runs: u32,
}

/// What a step did to which row, for the checks that compare a row with its previous version.
#[derive(Default, Debug)]
struct Effect {
    /// Rows the notification loop legitimately changed (a claim or an accepted write).
    notify_touched: BTreeSet<TaskId>,
    /// Rows that must be exactly as before (refused writes, repeated or foreign cancels).
    unchanged: BTreeSet<TaskId>,
    /// Accepted writes that recorded this event (or its absence) against the outbox.
    recorded: Option<(TaskId, Option<tasklatch_core::event::Fingerprint>)>,
}

impl Sut {
    fn new() -> Sut {
        let policy = policy();
        Sut {
            store: MemStore::new(policy.clone()),
            policy,
            now: T0,
            tasks: Vec::new(),
            claims: Vec::new(),
            newest: BTreeMap::new(),
            runs: 0,
        }
    }

    fn rows(&self) -> BTreeMap<TaskId, TaskRow> {
        ready(self.store.admin_rows(None, usize::MAX))
            .expect("rows")
            .into_iter()
            .map(|r| (r.id().clone(), r))
            .collect()
    }

    fn pick(
        &mut self,
        kind: LeaseKind,
        pick: Pick,
        prev: &BTreeMap<TaskId, TaskRow>,
        effect: &mut Effect,
    ) -> Option<Claimed> {
        if let Pick::Fresh(worker) = pick {
            let before = self.claims.len();
            self.claim(kind, worker, 1, prev, effect);
            return self.claims.get(before).map(|(_, c)| c.clone());
        }
        let of_kind: Vec<&Claimed> = self
            .claims
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, c)| c)
            .collect();
        let chosen = match pick {
            Pick::Latest => of_kind.last(),
            Pick::Any(i) if !of_kind.is_empty() => Some(&of_kind[i.index(of_kind.len())]),
            Pick::Any(_) | Pick::Fresh(..) => None,
        };
        chosen.map(|c| (*c).clone())
    }

    /// Whether a write under `lease` about `task` must be refused at `at` on the row as it was.
    fn stale(&self, prev: &TaskRow, kind: LeaseKind, lease: &Lease, at: Timestamp) -> bool {
        let superseded = self
            .newest
            .get(&(prev.id().clone(), kind))
            .is_some_and(|newest| lease.token.0 < *newest);
        let held = prev
            .lease(kind)
            .is_some_and(|l| l.owner == lease.owner && l.token == lease.token && l.expires_at > at);
        superseded || !held
    }

    fn step(&mut self, op: Op) -> Effect {
        let prev = self.rows();
        let mut effect = Effect::default();
        match op {
            Op::Submit { first, bob } => self.submit(first, bob),
            Op::Advance { secs: n } => self.now = self.now.plus(secs(n)),
            Op::Claim { kind, worker } => self.claim(kind, worker, 10, &prev, &mut effect),
            Op::Poll {
                pick,
                result,
                early,
            } => {
                if let Some(c) = self.pick(LeaseKind::Poll, pick, &prev, &mut effect) {
                    self.poll(c, result, early, &self.rows(), &mut effect);
                }
            }
            Op::Notify { pick, launch, run } => {
                if let Some(c) = self.pick(LeaseKind::Notify, pick, &prev, &mut effect) {
                    self.notify(c, launch, run, &self.rows(), &mut effect);
                }
            }
            Op::Cancel { pick, result } => {
                if let Some(c) = self.pick(LeaseKind::Cancel, pick, &prev, &mut effect) {
                    self.cancel(c, result, &self.rows(), &mut effect);
                }
            }
            Op::Release { kind, pick, error } => {
                if let Some(c) = self.pick(kind, pick, &prev, &mut effect) {
                    self.release(kind, c, error, &self.rows(), &mut effect);
                }
            }
            Op::RequestCancel { task, foreign } => {
                self.request_cancel(task, foreign, &prev, &mut effect)
            }
        }
        let next = self.rows();
        check_step(&prev, &next, &effect, self.now);
        effect
    }

    fn submit(&mut self, first: First, bob: bool) {
        let n = self.tasks.len();
        let task = format!("tsk_{n}");
        let owner = if bob { "bob" } else { "alice" };
        let id = Identity {
            owner: owner.into(),
            ..identity(&task, &format!("job-{}", n % 2))
        };
        let remote = id.handle.remote_task_id.expose().to_owned();
        let status = match first {
            First::NoReport => None,
            First::Working => Some("working"),
            First::InputRequired => Some("input_required"),
            First::Completed => Some("completed"),
            First::Failed => Some("failed"),
        };
        let first = status.map(|s| validate(&report(&remote, s), &id.handle));
        let scope = Scope {
            owner: id.owner.clone(),
            thread: id.thread.clone(),
        };
        let row = new_row(id, first, self.now, &self.policy);
        ready(self.store.insert_task(row)).expect("insert");
        self.tasks.push((TaskId(task), scope));
    }

    fn claim(
        &mut self,
        kind: LeaseKind,
        worker: usize,
        limit: usize,
        prev: &BTreeMap<TaskId, TaskRow>,
        effect: &mut Effect,
    ) {
        let req = ClaimRequest {
            worker: WORKERS[worker].into(),
            now: self.now,
            lease_for: secs(LEASE_FOR),
            limit,
        };
        let claimed = ready(self.store.claim(kind, req)).expect("claim");
        let mut expected: Vec<(Timestamp, &TaskId)> = prev
            .values()
            .filter(|r| spec_claimable(kind, r, self.now))
            .map(|r| (spec_due(kind, r), r.id()))
            .collect();
        expected.sort();
        expected.truncate(limit);
        let expected: Vec<&TaskId> = expected.into_iter().map(|(_, id)| id).collect();
        let got: Vec<&TaskId> = claimed.iter().map(|c| c.row.id()).collect();
        assert_eq!(
            got, expected,
            "{kind:?} claim takes the claimable rows by due time, then id"
        );
        for c in claimed {
            let id = c.row.id().clone();
            let newest = self.newest.entry((id.clone(), kind)).or_insert(0);
            assert!(
                c.lease.token.0 > *newest,
                "fencing tokens strictly increase"
            );
            *newest = c.lease.token.0;
            assert_eq!(c.lease.expires_at, self.now.plus(secs(LEASE_FOR)));
            if kind == LeaseKind::Notify {
                assert!(
                    c.row.outbox.failures <= FAILURE_BUDGET,
                    "failures ≤ budget at claim time"
                );
                let po = &prev[&id].outbox;
                let newer = po.dispatch_version < po.event_version && po.event.is_some();
                if po.status.in_flight()
                    && po.dispatch_event.is_some()
                    && (po.status == NotifyStatus::Dispatched || !newer)
                {
                    assert_eq!(
                        frozen(&c.row),
                        frozen(&prev[&id]),
                        "{id}: a re-claim keeps the snapshot"
                    );
                    assert_eq!(c.row.outbox.status, po.status);
                } else {
                    assert_eq!(
                        c.row.outbox.dispatch_version, c.row.outbox.event_version,
                        "{id}: frozen the latest"
                    );
                    assert_eq!(
                        c.row.outbox.dispatch_event, c.row.outbox.event,
                        "{id}: frozen the latest event"
                    );
                    let counters = (c.row.outbox.failures, c.row.outbox.dispatch_attempt);
                    if po.dispatch_version == c.row.outbox.dispatch_version {
                        assert_eq!(
                            counters,
                            (po.failures, po.dispatch_attempt),
                            "{id}: same version"
                        );
                    } else {
                        assert_eq!(counters, (0, 0), "{id}: a new version resets the counters");
                    }
                }
                effect.notify_touched.insert(id);
            } else if kind == LeaseKind::Cancel {
                assert!(c.row.cancel.failures <= CANCEL_BUDGET);
            }
            self.claims.push((kind, c));
        }
    }

    fn poll(
        &mut self,
        c: Claimed,
        result: PollResult,
        early: bool,
        prev: &BTreeMap<TaskId, TaskRow>,
        effect: &mut Effect,
    ) {
        let id = c.row.id().clone();
        let row = &c.row;
        let handle = &row.identity.handle;
        let remote = handle.remote_task_id.expose().to_owned();
        // when the remote call completed: now, or a little earlier (but not before the claim)
        let claimed_at = c.lease.expires_at.minus(secs(LEASE_FOR));
        let now = if early {
            claimed_at.max(self.now.minus(secs(5)))
        } else {
            self.now
        };
        let ok = |r: RemoteReport| on_report(row, validate(&r, handle), now, &self.policy);
        let update: PollUpdate = match result {
            PollResult::Same => {
                let status = match row.remote.status {
                    RemoteStatus::Submitted => RemoteStatus::Working,
                    s => s,
                };
                ok(RemoteReport {
                    result: row.remote.result.clone(),
                    artifact: row.remote.artifact.clone(),
                    error: row.remote.error.clone(),
                    input_request: row.remote.input_request.clone(),
                    ..report(&remote, status.as_str())
                })
            }
            PollResult::Working => ok(report(&remote, "working")),
            PollResult::InputRequired(v) => ok(RemoteReport {
                input_request: Some(format!("question {v}")),
                ..report(&remote, "input_required")
            }),
            PollResult::Completed(v) => ok(RemoteReport {
                result: Some(format!("result {v}")),
                ..report(&remote, "completed")
            }),
            PollResult::Failed => ok(RemoteReport {
                error: Some("remote failure".into()),
                ..report(&remote, "failed")
            }),
            PollResult::Transient(class, text) => on_failure(
                row,
                PollError {
                    class,
                    message: format!("transient #{text}"),
                },
                now,
                &self.policy,
            ),
            PollResult::Protocol => {
                on_report(row, Err(ProtocolError::WrongTaskId), now, &self.policy)
            }
        };
        let p = &prev[&id];
        let stale = self.stale(p, LeaseKind::Poll, &c.lease, now);
        let must_apply =
            !stale && p.cancel.requested_at.is_none() && !p.remote.status.is_terminal();
        let fp = update.event.as_ref().map(|(_, fp)| fp.clone());
        let out = ready(self.store.apply_polls(
            vec![PollWrite {
                task_id: id.clone(),
                lease: c.lease.clone(),
                completed_at: now,
                update,
            }],
            self.now,
        ))
        .expect("apply polls");
        self.expect(&id, &out, must_apply, effect);
        if out[0].is_ok() {
            effect.recorded = Some((id, fp));
        }
    }

    fn notify(
        &mut self,
        c: Claimed,
        launch: Launch,
        run: RunOutcome,
        prev: &BTreeMap<TaskId, TaskRow>,
        effect: &mut Effect,
    ) {
        let id = c.row.id().clone();
        let o = &c.row.outbox;
        // the engine's order: budget first, then the run or the launch
        let action = if o.failures >= FAILURE_BUDGET {
            NotifyAction::BudgetExhausted
        } else if o.status == NotifyStatus::Dispatched {
            match run {
                RunOutcome::Succeeded => NotifyAction::RunSucceeded,
                RunOutcome::Failed => NotifyAction::RunFailed("run ended: error".into()),
                RunOutcome::Pending => NotifyAction::RunPending,
                RunOutcome::LookupUnavailable => NotifyAction::LookupUnavailable("lookup".into()),
            }
        } else {
            match launch {
                Launch::Launched => {
                    self.runs += 1;
                    NotifyAction::Launched(RunId(format!("run-{}", self.runs)))
                }
                Launch::Busy => NotifyAction::Busy,
                Launch::ThreadGone => NotifyAction::ThreadGone,
                Launch::Failed => NotifyAction::LaunchFailed("400".into()),
                Launch::Unavailable => NotifyAction::LaunchUnavailable("502".into()),
            }
        };
        let p = &prev[&id];
        let stale = self.stale(p, LeaseKind::Notify, &c.lease, self.now);
        let must_apply = !stale && p.outbox.dispatch_version == o.dispatch_version;
        let out = ready(self.store.finish_notifications(
            vec![NotifyWrite {
                task_id: id.clone(),
                lease: c.lease.clone(),
                dispatch_version: o.dispatch_version,
                action: action.clone(),
            }],
            self.now,
        ))
        .expect("finish notifications");
        self.expect(&id, &out, must_apply, effect);
        if out[0].is_ok() {
            check_notify_action(&p.outbox, &self.rows()[&id].outbox, &action);
            effect.notify_touched.insert(id);
        }
    }

    fn cancel(
        &mut self,
        c: Claimed,
        result: CancelResult,
        prev: &BTreeMap<TaskId, TaskRow>,
        effect: &mut Effect,
    ) {
        let id = c.row.id().clone();
        let row = &c.row;
        let remote = row.identity.handle.remote_task_id.expose().to_owned();
        let finished = |r: RemoteReport| {
            let update = on_report(
                row,
                validate(&r, &row.identity.handle),
                self.now,
                &self.policy,
            );
            let fp = update.event.as_ref().map(|(_, fp)| fp.clone());
            (CancelAction::Finished(Box::new(update)), Some(fp))
        };
        let (action, fp) = if row.cancel.failures >= CANCEL_BUDGET {
            (CancelAction::BudgetExhausted, None)
        } else {
            match result {
                CancelResult::Cancelled => finished(report(&remote, "cancelled")),
                CancelResult::FinishedFirst => finished(RemoteReport {
                    result: Some("finished first".into()),
                    ..report(&remote, "completed")
                }),
                CancelResult::Failed(n) => {
                    (CancelAction::Failed(format!("cancel failed #{n}")), None)
                }
                CancelResult::Unavailable(n) => (
                    CancelAction::Unavailable(format!("cancel unanswered #{n}")),
                    None,
                ),
            }
        };
        let p = &prev[&id];
        let must_apply = !self.stale(p, LeaseKind::Cancel, &c.lease, self.now);
        let out = ready(self.store.finish_cancels(
            vec![CancelWrite {
                task_id: id.clone(),
                lease: c.lease.clone(),
                action,
            }],
            self.now,
        ))
        .expect("finish cancels");
        self.expect(&id, &out, must_apply, effect);
        if let (Ok(_), Some(fp)) = (&out[0], fp) {
            if !p.remote.status.is_terminal() {
                effect.recorded = Some((id, fp));
            }
        }
    }

    fn release(
        &mut self,
        kind: LeaseKind,
        c: Claimed,
        error: bool,
        prev: &BTreeMap<TaskId, TaskRow>,
        effect: &mut Effect,
    ) {
        let id = c.row.id().clone();
        // the engine never counts past the budget: it checks the budget before anything else
        let within_budget = match kind {
            LeaseKind::Poll => true,
            LeaseKind::Notify => c.row.outbox.failures < FAILURE_BUDGET,
            LeaseKind::Cancel => c.row.cancel.failures < CANCEL_BUDGET,
        };
        let error = (error && within_budget).then(|| "unexpected".to_owned());
        let retry_at = if error.is_some() {
            self.now.plus(self.policy.release_backoff)
        } else {
            self.now
        };
        let p = &prev[&id];
        let must_apply = !self.stale(p, kind, &c.lease, self.now);
        let out = ready(self.store.release(
            kind,
            vec![Release {
                task_id: id.clone(),
                lease: c.lease.clone(),
                retry_at,
                error: error.clone(),
            }],
            self.now,
        ))
        .expect("release");
        self.expect(&id, &out, must_apply, effect);
        if out[0].is_ok() {
            let row = &self.rows()[&id];
            assert!(row.lease(kind).is_none(), "released");
            if kind == LeaseKind::Notify {
                effect.notify_touched.insert(id.clone());
                let counted = u32::from(error.is_some());
                assert_eq!(
                    row.outbox.failures,
                    p.outbox.failures + counted,
                    "only a release with an error counts (never a shutdown)"
                );
            }
            if kind == LeaseKind::Cancel {
                assert_eq!(
                    row.cancel.failures,
                    p.cancel.failures + u32::from(error.is_some())
                );
            }
        }
    }

    fn request_cancel(
        &mut self,
        task: usize,
        foreign: bool,
        prev: &BTreeMap<TaskId, TaskRow>,
        effect: &mut Effect,
    ) {
        let (id, scope) = self.tasks[task % self.tasks.len()].clone();
        let caller = if foreign {
            Scope {
                owner: if scope.owner.as_str() == "bob" {
                    "alice"
                } else {
                    "bob"
                }
                .into(),
                thread: scope.thread.clone(),
            }
        } else {
            scope
        };
        let out = ready(self.store.request_cancel(
            &caller,
            &CancelTarget::Id(id.clone()),
            self.now,
        ))
        .expect("request cancel");
        let p = &prev[&id];
        let expected = if foreign {
            CancelOutcome::NotFound
        } else if p.remote.status.is_terminal() {
            CancelOutcome::AlreadyFinished(id.clone())
        } else if p.cancel.requested_at.is_some() {
            CancelOutcome::AlreadyRequested(id.clone())
        } else {
            CancelOutcome::Requested(id.clone())
        };
        assert_eq!(out, expected);
        if matches!(out, CancelOutcome::Requested(_)) {
            let row = &self.rows()[&id];
            assert_eq!(row.cancel.requested_at, Some(self.now));
            assert_eq!(row.cancel.status, CancelStatus::Requested);
            assert_eq!(
                row.poll.lease, p.poll.lease,
                "the lease row is untouched: the poll guard's cancel check is the void"
            );
        } else {
            effect.unchanged.insert(id);
        }
    }

    fn expect(&self, id: &TaskId, out: &[WriteOutcome], must_apply: bool, effect: &mut Effect) {
        assert_eq!(out.len(), 1);
        match (&out[0], must_apply) {
            (Ok(_), true) => {}
            (Err(_), false) => {
                effect.unchanged.insert(id.clone());
            }
            (Ok(_), false) => panic!("a stale or guarded write was accepted for {id}"),
            (Err(refusal), true) => panic!("a valid write was refused for {id}: {refusal:?}"),
        }
    }
}

/// The claim rules of DOMAIN §3, §4, §6, written out independently of the store.
fn spec_claimable(kind: LeaseKind, row: &TaskRow, now: Timestamp) -> bool {
    let free = row.lease(kind).is_none_or(|l| l.expires_at <= now);
    free && match kind {
        LeaseKind::Poll => {
            row.remote.status.is_pollable()
                && row.cancel.requested_at.is_none()
                && row.poll.next_poll_at.is_some_and(|t| t <= now)
        }
        LeaseKind::Notify => {
            matches!(
                row.outbox.status,
                NotifyStatus::Pending
                    | NotifyStatus::Claimed
                    | NotifyStatus::Retry
                    | NotifyStatus::Dispatched
            ) && row.outbox.event_version > row.outbox.notified_version
                && row.outbox.due_at <= now
        }
        LeaseKind::Cancel => {
            row.cancel.status == CancelStatus::Requested
                && row.cancel.due_at.is_some_and(|t| t <= now)
        }
    }
}

fn spec_due(kind: LeaseKind, row: &TaskRow) -> Timestamp {
    match kind {
        LeaseKind::Poll => row.poll.next_poll_at,
        LeaseKind::Notify => Some(row.outbox.due_at),
        LeaseKind::Cancel => row.cancel.due_at,
    }
    .unwrap_or(Timestamp::from_micros(i64::MAX))
}

type Frozen = (u64, Option<Event>, u32, Option<RunId>);

fn frozen(r: &TaskRow) -> Frozen {
    (
        r.outbox.dispatch_version,
        r.outbox.dispatch_event.clone(),
        r.outbox.dispatch_attempt,
        r.outbox.run_id.clone(),
    )
}

/// What each accepted notification step does to the outbox (DOMAIN §3), `p` before, `n` after.
fn check_notify_action(p: &Outbox, n: &Outbox, action: &NotifyAction) {
    let dv = p.dispatch_version;
    let ended = |n: &Outbox, done: NotifyStatus| {
        assert!(
            n.notified_version >= dv,
            "the dispatched version is settled"
        );
        let newer = p.event_version > dv && p.event.is_some();
        let settled = if newer {
            p.notified_version.max(dv)
        } else {
            p.event_version
        };
        assert_eq!(n.notified_version, settled, "{action:?}: what is settled");
        assert_eq!(
            n.status,
            if newer { NotifyStatus::Pending } else { done },
            "{action:?}"
        );
        assert_eq!((n.dispatch_event.clone(), n.run_id.clone()), (None, None));
    };
    assert!(n.lease.is_none(), "every step releases the lease");
    match action {
        NotifyAction::Launched(run) => {
            assert_eq!(n.status, NotifyStatus::Dispatched);
            assert_eq!(n.run_id.as_ref(), Some(run));
            assert_eq!(
                (n.failures, n.dispatch_attempt),
                (p.failures, p.dispatch_attempt)
            );
        }
        NotifyAction::Busy => {
            assert_eq!(n.failures, p.failures, "a 409 is not a failure");
            assert_eq!(n.busy_count, p.busy_count + 1, "but it is counted");
            assert_eq!(n.dispatch_event, None, "the snapshot is rebuilt next time");
            assert!(matches!(
                n.status,
                NotifyStatus::Pending | NotifyStatus::None
            ));
        }
        NotifyAction::ThreadGone => {
            assert_eq!(n.dead_letter, Some((dv, DeadLetterReason::ThreadGone)));
            assert_eq!(
                n.failures,
                if n.status == NotifyStatus::Pending {
                    0
                } else {
                    p.failures
                }
            );
            ended(n, NotifyStatus::DeadLetter);
        }
        NotifyAction::LaunchFailed(_) => {
            assert_eq!(n.failures, p.failures + 1, "counted");
            assert_eq!(
                n.dispatch_attempt, p.dispatch_attempt,
                "the same key is retried"
            );
            if p.event.is_some() {
                assert_eq!(n.status, NotifyStatus::Pending);
            } else {
                assert_eq!(
                    (n.status, n.notified_version, n.dispatch_event.clone()),
                    (NotifyStatus::None, n.event_version, None),
                    "attention cleared meanwhile: nothing is left to say"
                );
            }
        }
        NotifyAction::RunSucceeded => ended(n, NotifyStatus::Delivered),
        NotifyAction::RunFailed(_) => {
            assert_eq!(n.failures, p.failures + 1, "counted");
            assert_eq!(n.dispatch_attempt, p.dispatch_attempt + 1, "a new key");
            assert_eq!((n.status, n.run_id.clone()), (NotifyStatus::Retry, None));
        }
        NotifyAction::RunOutlived(_) => {
            assert_eq!(n.failures, p.failures + 1, "counted");
            assert_eq!(n.dispatch_attempt, p.dispatch_attempt + 1, "a new key");
            assert_eq!(
                (n.status, n.run_id.clone()),
                (NotifyStatus::Retry, p.run_id.clone()),
                "the interrupted run is kept, to be looked at before the next launch"
            );
        }
        NotifyAction::RunPending => {
            assert_eq!(
                (n.status, n.failures),
                (NotifyStatus::Dispatched, p.failures)
            );
            assert_eq!(n.run_id, p.run_id);
        }
        NotifyAction::LookupUnavailable(_) => {
            assert_eq!(
                (n.status, n.failures),
                (NotifyStatus::Dispatched, p.failures),
                "an unanswered lookup is waited out, never counted"
            );
            assert_eq!(n.dispatch_attempt, p.dispatch_attempt);
            assert_eq!(n.outages, p.outages + 1);
            assert!(n.unavailable_since.is_some());
            assert!(p.unavailable_since.is_none() || n.unavailable_since == p.unavailable_since);
        }
        NotifyAction::LaunchUnavailable(_) => {
            assert_eq!(
                n.failures, p.failures,
                "an unanswered launch is not counted"
            );
            assert_eq!(n.dispatch_attempt, p.dispatch_attempt, "the same key");
            assert_eq!(n.outages, p.outages + 1);
            assert!(matches!(
                n.status,
                NotifyStatus::Pending | NotifyStatus::None
            ));
        }
        NotifyAction::BudgetExhausted => {
            assert_eq!(n.dead_letter, Some((dv, DeadLetterReason::Budget)));
            ended(n, NotifyStatus::DeadLetter);
        }
    }
}

/// Invariants of one row on its own: the row's rules ([`TaskRow::check_invariants`], the same
/// function the transitions and `MemStore` assert in debug builds) and the failure budgets,
/// which the engine keeps by checking them before it acts (emulated by this test's steps).
fn check_row(r: &TaskRow) {
    let id = r.id();
    if let Err(rule) = r.check_invariants() {
        panic!("{id}: invariant broken: {rule}");
    }
    assert!(
        r.outbox.failures <= FAILURE_BUDGET,
        "{id}: at most {FAILURE_BUDGET} counted failures"
    );
    assert!(
        r.cancel.failures <= CANCEL_BUDGET,
        "{id}: at most {CANCEL_BUDGET} counted cancel failures"
    );
}

/// Invariants of a row against its previous version.
fn check_step(
    prev: &BTreeMap<TaskId, TaskRow>,
    next: &BTreeMap<TaskId, TaskRow>,
    effect: &Effect,
    now: Timestamp,
) {
    for (id, n) in next {
        check_row(n);
        let Some(p) = prev.get(id) else { continue };
        let (po, no) = (&p.outbox, &n.outbox);
        assert_eq!(n.identity, p.identity, "{id}: identity never changes");
        assert!(
            no.event_version >= po.event_version,
            "{id}: event_version never decreases"
        );
        assert!(
            no.notified_version >= po.notified_version,
            "{id}: notified_version never decreases"
        );
        assert!(
            no.dispatch_version >= po.dispatch_version,
            "{id}: dispatch_version never decreases"
        );
        assert!(
            no.claims >= po.claims
                && n.poll.claims >= p.poll.claims
                && n.cancel.claims >= p.cancel.claims
        );
        if p.remote.status.is_terminal() {
            assert_eq!(
                n.remote, p.remote,
                "{id}: a terminal task never changes again"
            );
        }
        if effect.unchanged.contains(id) {
            assert_eq!(
                n, p,
                "{id}: a refused write or a repeated cancel changes nothing"
            );
        }
        if po.status.in_flight()
            && po.dispatch_event.is_some()
            && !effect.notify_touched.contains(id)
        {
            assert_eq!(
                frozen(n),
                frozen(p),
                "{id}: the in-flight snapshot changes only through its own claim or write"
            );
        }
        if let Some((rid, fp)) = &effect.recorded {
            if rid == id {
                match fp {
                    Some(fp) if po.fingerprint.as_ref() == Some(fp) => assert_eq!(
                        no.event_version, po.event_version,
                        "{id}: the same fingerprint changes nothing"
                    ),
                    Some(_) => {
                        assert_eq!(
                            no.event_version,
                            po.event_version + 1,
                            "{id}: a new fingerprint is one new version"
                        );
                        if !po.status.in_flight() {
                            assert_eq!(
                                (no.status, no.due_at),
                                (NotifyStatus::Pending, now),
                                "{id}: reopened"
                            );
                            assert_eq!(
                                (
                                    no.failures,
                                    no.dispatch_attempt,
                                    no.dispatch_event.is_none()
                                ),
                                (0, 0, true),
                                "{id}: a reopened channel starts afresh"
                            );
                        } else {
                            assert_eq!(no.status, po.status, "{id}: in flight: only recorded");
                        }
                    }
                    None => {
                        assert_eq!(no.event_version, po.event_version);
                        assert_eq!(
                            no.fingerprint, None,
                            "{id}: attention cleared retires the fingerprint"
                        );
                    }
                }
            }
        }
    }
}

/// The test harness, generic over the reference model that generates the operations.
struct Harness<R>(std::marker::PhantomData<R>);

impl<R: ReferenceStateMachine<State = ModelState, Transition = Op>> StateMachineTest
    for Harness<R>
{
    type SystemUnderTest = Sut;
    type Reference = R;

    fn init_test(_: &ModelState) -> Sut {
        Sut::new()
    }

    fn apply(mut sut: Sut, _: &ModelState, op: Op) -> Sut {
        sut.step(op);
        sut
    }

    fn check_invariants(sut: &Sut, model: &ModelState) {
        assert_eq!(sut.tasks.len(), model.tasks);
        for r in sut.rows().values() {
            check_row(r);
        }
    }
}

/// A second reference model that concentrates on delivery: few tasks that need attention,
/// frequent failures (so budgets run out), new versions arriving while a dispatch is in flight,
/// crashed claims and releases.
struct DeliveryModel;

impl ReferenceStateMachine for DeliveryModel {
    type State = ModelState;
    type Transition = Op;

    fn init_state() -> BoxedStrategy<ModelState> {
        Just(ModelState { tasks: 0 }).boxed()
    }

    fn transitions(state: &ModelState) -> BoxedStrategy<Op> {
        let submit = prop_oneof![
            Just(First::InputRequired),
            Just(First::Working),
            Just(First::Completed)
        ]
        .prop_map(|first| Op::Submit { first, bob: false });
        if state.tasks == 0 {
            return submit.boxed();
        }
        let fresh = (0..WORKERS.len()).prop_map(Pick::Fresh);
        let pick = prop_oneof![6 => fresh, 1 => Just(Pick::Latest), 1 => any::<Index>().prop_map(Pick::Any)];
        let launch = prop_oneof![
            3 => Just(Launch::Launched),
            1 => Just(Launch::Busy),
            6 => Just(Launch::Failed),
            2 => Just(Launch::Unavailable)
        ];
        let run = prop_oneof![
            1 => Just(RunOutcome::Succeeded),
            6 => Just(RunOutcome::Failed),
            1 => Just(RunOutcome::Pending),
            2 => Just(RunOutcome::LookupUnavailable)
        ];
        let poll = prop_oneof![
            2 => (0u8..4).prop_map(PollResult::InputRequired),
            2 => (class(), any::<u8>()).prop_map(|(c, t)| PollResult::Transient(c, t)),
            1 => Just(PollResult::Working),
            1 => Just(PollResult::Same)
        ];
        prop_oneof![
            1 => submit,
            5 => prop_oneof![1u64..4, 4u64..12].prop_map(|secs| Op::Advance { secs }),
            10 => (pick.clone(), launch, run).prop_map(|(pick, launch, run)| Op::Notify { pick, launch, run }),
            1 => (0..WORKERS.len(), poll)
                .prop_map(|(w, result)| Op::Poll { pick: Pick::Fresh(w), result, early: false }),
            2 => (pick, any::<bool>()).prop_map(|(pick, error)| Op::Release { kind: LeaseKind::Notify, pick, error }),
            1 => (0..WORKERS.len()).prop_map(|worker| Op::Claim { kind: LeaseKind::Notify, worker }),
        ]
        .boxed()
    }

    fn preconditions(state: &ModelState, op: &Op) -> bool {
        match op {
            Op::Submit { .. } => state.tasks < 2,
            _ => state.tasks > 0,
        }
    }

    fn apply(state: ModelState, op: &Op) -> ModelState {
        <Model as ReferenceStateMachine>::apply(state, op)
    }
}

/// A third reference model that concentrates on versions: tasks that keep changing (new
/// questions, degraded tracking, recovery, completion) while their notifications are in flight,
/// so dispatches end with newer versions waiting.
struct VersionModel;

impl ReferenceStateMachine for VersionModel {
    type State = ModelState;
    type Transition = Op;

    fn init_state() -> BoxedStrategy<ModelState> {
        Just(ModelState { tasks: 0 }).boxed()
    }

    fn transitions(state: &ModelState) -> BoxedStrategy<Op> {
        let submit = prop_oneof![Just(First::Working), Just(First::NoReport)]
            .prop_map(|first| Op::Submit { first, bob: false });
        if state.tasks == 0 {
            return submit.boxed();
        }
        let launch = prop_oneof![
            6 => Just(Launch::Launched),
            1 => Just(Launch::Busy),
            1 => Just(Launch::ThreadGone),
            1 => Just(Launch::Failed)
        ];
        let run = prop_oneof![
            4 => Just(RunOutcome::Succeeded),
            1 => Just(RunOutcome::Failed),
            2 => Just(RunOutcome::Pending)
        ];
        let poll = prop_oneof![
            3 => (0u8..3).prop_map(PollResult::InputRequired),
            4 => (class(), any::<u8>()).prop_map(|(c, t)| PollResult::Transient(c, t)),
            2 => Just(PollResult::Working),
            1 => (0u8..2).prop_map(PollResult::Completed)
        ];
        let fresh = (0..WORKERS.len()).prop_map(Pick::Fresh);
        prop_oneof![
            1 => submit,
            5 => prop_oneof![4 => 1u64..12, 1 => 30u64..70].prop_map(|secs| Op::Advance { secs }),
            6 => (fresh.clone(), launch, run)
                .prop_map(|(pick, launch, run)| Op::Notify { pick, launch, run }),
            6 => (fresh, poll).prop_map(|(pick, result)| Op::Poll { pick, result, early: false }),
        ]
        .boxed()
    }

    fn preconditions(state: &ModelState, op: &Op) -> bool {
        match op {
            Op::Submit { .. } => state.tasks < 2,
            _ => state.tasks > 0,
        }
    }

    fn apply(state: ModelState, op: &Op) -> ModelState {
        <Model as ReferenceStateMachine>::apply(state, op)
    }
}

prop_state_machine! {
    #![proptest_config(ProptestConfig {
        cases: 1024,
        max_shrink_iters: 4_096,
        failure_persistence: None,
        .. ProptestConfig::default()
    })]

    #[test]
    fn mem_store_keeps_every_row_invariant_under_random_operations(sequential 10..40 => Harness<Model>);

    #[test]
    fn mem_store_keeps_every_row_invariant_under_delivery_failures(sequential 20..40 => Harness<DeliveryModel>);

    #[test]
    fn mem_store_keeps_every_row_invariant_while_versions_change_in_flight(sequential 20..40 => Harness<VersionModel>);
}

#[test]
fn the_state_machine_reaches_the_interesting_states() {
    // A fixed walk through the machinery the random test relies on, so a harness bug that made
    // every random step a no-op would not go unnoticed.
    let mut sut = Sut::new();
    let ops = vec![
        Op::Submit {
            first: First::InputRequired,
            bob: false,
        },
        Op::Claim {
            kind: LeaseKind::Notify,
            worker: 0,
        },
        Op::Notify {
            pick: Pick::Latest,
            launch: Launch::Launched,
            run: RunOutcome::Succeeded,
        },
        Op::Advance { secs: 15 },
        Op::Claim {
            kind: LeaseKind::Notify,
            worker: 1,
        },
        Op::Notify {
            pick: Pick::Latest,
            launch: Launch::Launched,
            run: RunOutcome::Succeeded,
        },
        Op::Advance { secs: 60 },
        Op::Claim {
            kind: LeaseKind::Poll,
            worker: 2,
        },
        Op::Poll {
            pick: Pick::Latest,
            result: PollResult::Completed(1),
            early: false,
        },
        Op::RequestCancel {
            task: 0,
            foreign: false,
        },
    ];
    for op in ops {
        sut.step(op);
    }
    let row = &sut.rows()[&TaskId::from("tsk_0")];
    assert_eq!(row.remote.status, RemoteStatus::Completed);
    assert_eq!(
        (row.outbox.event_version, row.outbox.notified_version),
        (2, 1)
    );
    assert_eq!(row.outbox.status, NotifyStatus::Pending);
    assert_eq!(sut.claims.len(), 3);
}
