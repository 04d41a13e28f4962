//! The `user` host: users submitting tasks, cancelling and answering (their own and others'),
//! deleting threads and listing — everything they see is recorded.

use crate::history::Seen;
use crate::plan::naming::{owner_name, task_label, task_name, thread_name, USER_HOST};
use crate::plan::timing::PASS_INTERVAL;
use crate::plan::WorkloadMark;
use crate::plan::{request_id_at, TaskPlan, UserAction};
use crate::run::ctx::{now_ms, Ctx};
use crate::run::ports::{engine, Caller, RpcLauncher, SimEngine};
use crate::wire::gateway::{GatewayRequest, GatewayResponse};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tasklatch_core::engine::SubmitCommand;
use tasklatch_core::ids::{IdSource, SeededIds, TaskId, WorkerId};
use tasklatch_core::secret::Secret;
use tasklatch_core::store::{AnswerRequest, CancelTarget, RequeueOutcome, Scope};

fn scope(o: u32, t: u32) -> Scope {
    Scope {
        owner: owner_name(o).into(),
        thread: thread_name(o, t).into(),
    }
}

/// Ids handed out by a user's engine, recorded so the checker knows every task's id — even
/// for a submit whose answer the user never saw.
struct RecordingIds {
    n: u32,
    ctx: Arc<Ctx>,
    inner: SeededIds,
    assigned: Arc<Mutex<BTreeMap<u32, TaskId>>>,
}

impl IdSource for RecordingIds {
    fn task_id(&self) -> TaskId {
        let id = self.inner.task_id();
        self.ctx.history.label(id.as_str(), self.n);
        self.ctx.history.record(
            USER_HOST,
            Some(task_label(self.n)),
            Seen::SubmitSent {
                n: self.n,
                task_id: id.to_string(),
            },
        );
        self.assigned
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(self.n, id.clone());
        id
    }
}

enum Action {
    Submit(TaskPlan),
    User(UserAction),
}

/// The `user` host's software.
pub async fn host(ctx: Arc<Ctx>) -> turmoil::Result {
    let caller = Caller {
        name: USER_HOST.into(),
        ctx: ctx.clone(),
        lane: None,
    };
    let launcher = RpcLauncher {
        caller: caller.clone(),
    };
    let engine: Rc<SimEngine> = Rc::new(engine(caller, None, WorkerId(USER_HOST.into())));
    let mut threads: Vec<(u32, u32)> = ctx.plan.tasks.iter().map(|t| (t.owner, t.thread)).collect();
    threads.sort();
    threads.dedup();
    for (o, t) in threads {
        admin(
            &launcher,
            GatewayRequest::CreateThread(owner_name(o).into(), thread_name(o, t).into()),
        )
        .await;
    }
    // What submits owe (handles, withdrawals, compensating cancels) is settled from the start,
    // every pass interval, as a worker lane does (DOMAIN §7).
    let settling = engine.clone();
    tokio::task::spawn_local(async move {
        loop {
            settling.settle_submits().await;
            tokio::time::sleep(PASS_INTERVAL).await;
        }
    });
    let mut actions: Vec<(u64, usize, Action)> = Vec::new();
    for (i, t) in ctx.plan.tasks.iter().enumerate() {
        actions.push((t.submit_at_ms, i, Action::Submit(t.clone())));
    }
    for (i, a) in ctx.plan.user.iter().enumerate() {
        actions.push((a.at_ms(), ctx.plan.tasks.len() + i, Action::User(a.clone())));
    }
    actions.sort_by_key(|(at, seq, _)| (*at, *seq));
    let assigned = Arc::new(Mutex::new(BTreeMap::new()));
    let mut running = Vec::new();
    for (at, _, action) in actions {
        let wait = at.saturating_sub(now_ms());
        tokio::time::sleep(Duration::from_millis(wait)).await;
        let (ctx, engine, assigned) = (ctx.clone(), engine.clone(), assigned.clone());
        let launcher = RpcLauncher {
            caller: Caller {
                name: USER_HOST.into(),
                ctx: ctx.clone(),
                lane: None,
            },
        };
        running.push(tokio::task::spawn_local(async move {
            match action {
                Action::Submit(t) => submit(&ctx, &engine, &assigned, t).await,
                Action::User(a) => act(&ctx, &engine, &launcher, &assigned, a).await,
            }
        }));
    }
    for r in running {
        let _ = r.await;
    }
    ctx.set_user_done();
    std::future::pending().await
}

async fn admin(launcher: &RpcLauncher, req: GatewayRequest) {
    loop {
        if let Ok(GatewayResponse::Done(Ok(()))) = launcher.call(req.clone()).await {
            return;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

async fn submit(
    ctx: &Arc<Ctx>,
    engine: &SimEngine,
    assigned: &Arc<Mutex<BTreeMap<u32, TaskId>>>,
    t: TaskPlan,
) {
    if ctx
        .plan
        .tasks
        .iter()
        .any(|o| o.n != t.n && o.submit_at_ms == t.submit_at_ms)
    {
        ctx.exercised(WorkloadMark::SubmitBurst, USER_HOST, None);
    }
    let ids = RecordingIds {
        n: t.n,
        ctx: ctx.clone(),
        inner: SeededIds::new(ctx.plan.seed ^ (u64::from(t.n) << 32)),
        assigned: assigned.clone(),
    };
    let cmd = SubmitCommand {
        scope: scope(t.owner, t.thread),
        server: "mcp".into(),
        name: task_name(&t),
        tool: "job".into(),
        arguments: task_label(t.n),
    };
    let answer = engine
        .submit(&ids, cmd)
        .await
        .map(|id| id.to_string())
        .map_err(|e| e.to_string());
    let stored = answer.is_ok();
    ctx.history.record(
        USER_HOST,
        Some(task_label(t.n)),
        Seen::SubmitAnswered { n: t.n, answer },
    );
    // The owner looks at a stored hostile-named task's thread at once: its listing and run
    // context show the name to a model (DOMAIN §8), so every such task is seen there.
    if t.hostile_name && stored {
        ctx.exercised(
            WorkloadMark::HostileTaskName,
            USER_HOST,
            Some(task_label(t.n)),
        );
        look(ctx, engine, owner_name(t.owner), &scope(t.owner, t.thread)).await;
    }
}

async fn cancel(
    ctx: &Arc<Ctx>,
    engine: &SimEngine,
    n: u32,
    scope: Scope,
    target: CancelTarget,
    session: u32,
) {
    let by = scope.owner.to_string();
    let label = Some(task_label(n));
    ctx.history.record(
        USER_HOST,
        label.clone(),
        Seen::CancelSent {
            n,
            by: by.clone(),
            session,
        },
    );
    let answer = engine
        .cancel(&scope, &target)
        .await
        .map_err(|e| e.to_string());
    ctx.history
        .record(USER_HOST, label, Seen::CancelAnswered { n, by, answer });
}

/// Carries out user action `a` (tasks named by their plan number, found by the ids their
/// submits were given; an action on a task whose submit never got an id is skipped).
async fn act(
    ctx: &Arc<Ctx>,
    engine: &Rc<SimEngine>,
    launcher: &RpcLauncher,
    assigned: &Arc<Mutex<BTreeMap<u32, TaskId>>>,
    a: UserAction,
) {
    let id_of = |n: u32| {
        assigned
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&n)
            .cloned()
    };
    match a {
        UserAction::Cancel {
            task,
            repeats,
            concurrent,
            by_name,
            ..
        } => {
            let target = if by_name {
                ctx.plan
                    .task(task)
                    .map(|t| CancelTarget::Name(task_name(t)))
            } else {
                id_of(task).map(CancelTarget::Id)
            };
            if let Some(target) = target {
                owner_cancel(ctx, engine, task, target, repeats, concurrent).await;
            }
        }
        UserAction::ForeignCancel {
            task,
            by_owner,
            at_ms,
        } => {
            let Some(id) = id_of(task) else { return };
            foreign_cancel(ctx, engine, task, id, by_owner, at_ms).await;
        }
        UserAction::DeleteThread { owner, thread, .. } => {
            delete_thread(ctx, launcher, owner, thread).await;
        }
        UserAction::Requeue { task, .. } => {
            let Some(id) = id_of(task) else { return };
            requeue(ctx, engine, task, id).await;
        }
        UserAction::Answer {
            task,
            at_ms,
            by_owner,
            question,
        } => {
            let (Some(id), Some(plan)) = (id_of(task), ctx.plan.task(task)) else {
                return;
            };
            let request_id = request_id_at(plan, at_ms, question);
            answer(ctx, engine, plan, id, (request_id, at_ms), by_owner).await;
        }
        UserAction::List { owner, thread, .. } => list(ctx, engine, owner, thread).await,
    }
}

/// Owner `by_owner` cancels task `task` (id `id`) of another owner: the intruder knows the
/// victim's exact thread id, and the task's id (at an even `at_ms`) or name (odd) — only the
/// owner tells them apart.
async fn foreign_cancel(
    ctx: &Arc<Ctx>,
    engine: &SimEngine,
    task: u32,
    id: TaskId,
    by_owner: u32,
    at_ms: u64,
) {
    let Some(victim) = ctx.plan.task(task) else {
        return;
    };
    ctx.exercised(
        WorkloadMark::CancelForeign,
        USER_HOST,
        Some(task_label(task)),
    );
    let intruder = Scope {
        owner: owner_name(by_owner).into(),
        thread: thread_name(victim.owner, victim.thread).into(),
    };
    let target = if at_ms % 2 == 0 {
        CancelTarget::Id(id)
    } else {
        ctx.exercised(
            WorkloadMark::CancelForeignByName,
            USER_HOST,
            Some(task_label(task)),
        );
        CancelTarget::Name(task_name(victim))
    };
    cancel(ctx, engine, task, intruder, target, 0).await;
}

/// Owner `owner` deletes its thread `thread` at the gateway (retried until done), recorded.
async fn delete_thread(ctx: &Ctx, launcher: &RpcLauncher, owner: u32, thread: u32) {
    ctx.exercised(WorkloadMark::ThreadDeleted, USER_HOST, None);
    let thread_id = thread_name(owner, thread).into();
    admin(launcher, GatewayRequest::DeleteThread(thread_id)).await;
    let event = Seen::ThreadDeleted {
        owner: owner_name(owner),
        thread: thread_name(owner, thread),
    };
    ctx.history.record(USER_HOST, None, event);
}

/// The owner of task `task` (id `id`) requeues its dead letter.
async fn requeue(ctx: &Ctx, engine: &SimEngine, task: u32, id: TaskId) {
    if let Ok(RequeueOutcome::Requeued(_)) = engine.requeue_dead_letter(&id).await {
        ctx.exercised(
            WorkloadMark::DeadLetterRequeued,
            USER_HOST,
            Some(task_label(task)),
        );
    }
}

/// Owner `owner` looks at its thread `thread`; then another owner, presenting the thread's
/// exact id, looks too and must see nothing of it.
async fn list(ctx: &Arc<Ctx>, engine: &SimEngine, owner: u32, thread: u32) {
    let victim = scope(owner, thread);
    look(ctx, engine, owner_name(owner), &victim).await;
    let owners = ctx
        .plan
        .tasks
        .iter()
        .map(|t| t.owner + 1)
        .max()
        .unwrap_or(1);
    let intruder = (owner + 1) % owners;
    if intruder != owner {
        ctx.exercised(WorkloadMark::ListForeign, USER_HOST, None);
        look(ctx, engine, owner_name(intruder), &victim).await;
    }
}

/// `by` lists the thread `scope` names and reads its run context (the projection an agent run
/// is given), presenting that scope's exact thread id.
async fn look(ctx: &Arc<Ctx>, engine: &SimEngine, by: String, scope: &Scope) {
    let intruder = Scope {
        owner: by.as_str().into(),
        thread: scope.thread.clone(),
    };
    let answer = engine.list(&intruder).await.map_err(|e| e.to_string());
    let thread = scope.thread.to_string();
    let event = Seen::Listed {
        owner: by.clone(),
        thread: thread.clone(),
        answer,
    };
    ctx.history.record(USER_HOST, None, event);
    let answer = engine.context(&intruder).await.map_err(|e| e.to_string());
    let event = Seen::ContextRead {
        owner: by,
        thread,
        answer,
    };
    ctx.history.record(USER_HOST, None, event);
}

/// Answers request `request_id` of the question `plan`'s script asks at `at_ms`: as its owner,
/// or as owner `by_owner` presenting the victim's exact thread, task id and request id. The answer text names who
/// sent it and is a secret: it may reach the remote server and nothing else.
async fn answer(
    ctx: &Arc<Ctx>,
    engine: &SimEngine,
    plan: &TaskPlan,
    id: TaskId,
    (request_id, at_ms): (String, u64),
    by_owner: Option<u32>,
) {
    let mut s = scope(plan.owner, plan.thread);
    if let Some(intruder) = by_owner {
        ctx.exercised(
            WorkloadMark::AnswerForeign,
            USER_HOST,
            Some(task_label(plan.n)),
        );
        s.owner = owner_name(intruder).into();
    }
    let by = s.owner.to_string();
    let text = format!("answer-SECRET-{by}-{}-{request_id}-{at_ms}", plan.n);
    let label = Some(task_label(plan.n));
    ctx.history.record(
        USER_HOST,
        label.clone(),
        Seen::AnswerSent {
            n: plan.n,
            by: by.clone(),
            request_id: request_id.clone(),
            text: text.clone(),
        },
    );
    let request = AnswerRequest {
        task_id: id,
        request_id,
        text: Secret::new(text.clone()),
    };
    let answer = engine.answer(&s, request).await.map_err(|e| e.to_string());
    ctx.history.record(
        USER_HOST,
        label,
        Seen::AnswerAnswered {
            n: plan.n,
            by,
            text,
            answer,
        },
    );
}

/// The owner cancels task `n` in its thread: once (or twice at the same instant, from two
/// sessions, if `concurrent`), then `repeats` more times one second apart.
async fn owner_cancel(
    ctx: &Arc<Ctx>,
    engine: &Rc<SimEngine>,
    n: u32,
    target: CancelTarget,
    repeats: u32,
    concurrent: bool,
) {
    let Some(plan) = ctx.plan.task(n) else {
        return;
    };
    let s = scope(plan.owner, plan.thread);
    if concurrent {
        ctx.exercised(
            WorkloadMark::CancelConcurrent,
            USER_HOST,
            Some(task_label(n)),
        );
        let other = {
            let (ctx, engine, s, target) = (ctx.clone(), engine.clone(), s.clone(), target.clone());
            tokio::task::spawn_local(async move { cancel(&ctx, &engine, n, s, target, 1).await })
        };
        cancel(ctx, engine, n, s.clone(), target.clone(), 0).await;
        let _ = other.await;
    } else {
        cancel(ctx, engine, n, s.clone(), target.clone(), 0).await;
    }
    if matches!(target, CancelTarget::Name(_)) {
        ctx.exercised(WorkloadMark::CancelByName, USER_HOST, Some(task_label(n)));
    }
    for _ in 0..repeats {
        ctx.exercised(WorkloadMark::CancelRepeated, USER_HOST, Some(task_label(n)));
        tokio::time::sleep(Duration::from_secs(1)).await;
        cancel(ctx, engine, n, s.clone(), target.clone(), 0).await;
    }
}
