//! Plans from seeds, swarm-style: the seed picks which fault kinds are on and how hard, then
//! draws the workload and the timed faults. Same seed, same plan.

use crate::fault::*;
use crate::gateway_mode::GatewayMode;
use crate::plan::*;
use crate::timing::{LEASE_MS, MAX_BIG_SKEW, SUBMIT_GRACE_SECS};
use rand::seq::IndexedRandom;
use rand::Rng;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tasklatch_core::policy::SUBMIT_RETRY_CAP;

/// What the campaign's command line may fix instead of the seed.
#[derive(Clone, Debug, Default)]
pub struct Knobs {
    /// Worker hosts (1 to 16); drawn from the seed when absent.
    pub workers: Option<u32>,
    /// Tasks; drawn from the seed when absent.
    pub tasks: Option<u32>,
    /// Which launcher peer the gateway plays (not drawn: the same seed gives the same
    /// workload and faults in either mode).
    pub gateway: GatewayMode,
}

/// Length of the chaos phase of generated plans.
pub const CHAOS_MS: u64 = 180_000;
/// Scripts and user actions end this long before the chaos phase does.
const QUIET_TAIL_MS: u64 = 20_000;

/// Families of faults the swarm switches on or off per seed.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Family {
    Crash,
    Pause,
    Partition,
    Hold,
    LoseDb,
    LoseOther,
    Latency,
    Skew,
    GatewayBusy,
    GatewayErrors,
    LookupErrors,
    LostRuns,
    SlowRuns,
    BadRuns,
    RemoteErrors,
    SlowRemote,
    StuckRuns,
    RefuseInserts,
}

const FAMILIES: [Family; 18] = [
    Family::Crash,
    Family::Pause,
    Family::Partition,
    Family::Hold,
    Family::LoseDb,
    Family::LoseOther,
    Family::Latency,
    Family::Skew,
    Family::GatewayBusy,
    Family::GatewayErrors,
    Family::LookupErrors,
    Family::LostRuns,
    Family::SlowRuns,
    Family::BadRuns,
    Family::RemoteErrors,
    Family::SlowRemote,
    Family::StuckRuns,
    Family::RefuseInserts,
];

/// Kinds of hostile content the swarm switches on or off per seed.
const HOSTILE: [&str; 6] = [
    "oversized",
    "nul",
    "invalid_utf8",
    "forged",
    "secrets",
    "plain",
];

/// The plan of `seed`.
pub fn generate(seed: u64, knobs: &Knobs) -> Plan {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let workers = knobs
        .workers
        .unwrap_or_else(|| *[1, 1, 2, 2, 3, 3, 4].choose(&mut rng).unwrap_or(&3));
    let lanes = 2;
    let task_count = knobs.tasks.unwrap_or_else(|| rng.random_range(6..=14));
    let owners = rng.random_range(1..=3u32);
    let families: Vec<Family> = FAMILIES
        .iter()
        .copied()
        .filter(|_| rng.random_bool(0.5))
        .collect();
    let hostile: Vec<&str> = HOSTILE
        .iter()
        .copied()
        .filter(|_| rng.random_bool(0.5))
        .collect();
    let mut tasks = tasks(&mut rng, task_count, owners, &hostile);
    let mut user = user_actions(&mut rng, &tasks, owners);
    let mut faults = Vec::new();
    for family in families {
        for _ in 0..rng.random_range(1..=3) {
            faults.push(fault(&mut rng, family, workers, lanes));
        }
    }
    // Far beyond any lease margin, from a stream of its own: every other draw of the plan is
    // what it was before these existed.
    let mut skewing = ChaCha8Rng::seed_from_u64(seed ^ BIG_SKEW_STREAM);
    faults.extend(big_skew(&mut skewing, workers));
    faults.sort_by_key(|f| f.at_ms);
    // From a stream of its own, so that the rest of every plan is what it was before requeues
    // existed.
    let mut operator = ChaCha8Rng::seed_from_u64(seed ^ OPERATOR_STREAM);
    user.extend(requeues(&mut operator, &tasks, &user));
    // Answers too: seeds whose scripts ask nothing keep every other part of their plan.
    let mut answering = ChaCha8Rng::seed_from_u64(seed ^ ANSWER_STREAM);
    user.extend(answers(&mut answering, &tasks, owners));
    // Steps that ask several questions at once, answered out of order and one of them again,
    // from a stream of their own.
    let mut asking = ChaCha8Rng::seed_from_u64(seed ^ QUESTIONS_STREAM);
    user.extend(several_questions(&mut asking, &mut tasks));
    // And the servers' ways of answering cancels, with the late cancels that meet a legacy
    // server's "already terminal".
    let mut cancelling = ChaCha8Rng::seed_from_u64(seed ^ CANCEL_STREAM);
    user.extend(cancel_styles(&mut cancelling, &mut tasks));
    // And a poll held on the wire while another worker's acknowledged cancel ends the cancel
    // work, from a stream of its own.
    let mut holding = ChaCha8Rng::seed_from_u64(seed ^ HELD_POLL_STREAM);
    if let Some((cancel, hold)) = held_poll_then_cancel(&mut holding, &mut tasks, workers) {
        user.push(cancel);
        faults.push(hold);
    }
    // And lanes stalled just after sending an answer, from a stream of their own.
    let mut answer_pauses = ChaCha8Rng::seed_from_u64(seed ^ ANSWER_PAUSE_STREAM);
    faults.extend(pauses_after_answers(&mut answer_pauses, workers));
    faults.sort_by_key(|f| f.at_ms);
    // And graceful restarts of workers and of the remote server, from a stream of their own.
    let mut restarting = ChaCha8Rng::seed_from_u64(seed ^ RESTART_STREAM);
    faults.extend(restarts(&mut restarting, workers));
    faults.sort_by_key(|f| f.at_ms);
    // And one task's remote shard going down, from a stream of its own.
    let mut outages = ChaCha8Rng::seed_from_u64(seed ^ OUTAGE_STREAM);
    faults.extend(task_outages(&mut outages, &mut tasks));
    faults.sort_by_key(|f| f.at_ms);
    // And, when it goes down twice, a second outage that may last up to the heal, from a
    // stream of its own.
    let mut degrading = ChaCha8Rng::seed_from_u64(seed ^ DEGRADE_STREAM);
    long_second_outage(&mut degrading, &mut faults);
    // And a doomed notification meeting a newer state, from a stream of its own too.
    let mut dooming = ChaCha8Rng::seed_from_u64(seed ^ DOOM_STREAM);
    if let Some((fault, cancel)) = doomed_version(&mut dooming, &mut tasks) {
        faults.push(fault);
        faults.sort_by_key(|f| f.at_ms);
        user.push(cancel);
    }
    // Hostile task names, from a stream of their own too.
    let mut naming = ChaCha8Rng::seed_from_u64(seed ^ NAME_STREAM);
    hostile_names(&mut naming, &mut tasks);
    // Remote tasks the server cancels on its own, from a stream of their own too.
    let mut self_cancelling = ChaCha8Rng::seed_from_u64(seed ^ SELF_CANCEL_STREAM);
    user.extend(self_cancels(&mut self_cancelling, &mut tasks, &faults));
    // Database outages that meet submits between their intent and their handle, and runs that
    // ignore interrupts, each from a stream of its own.
    let mut failing_over = ChaCha8Rng::seed_from_u64(seed ^ STORE_DOWN_STREAM);
    faults.extend(store_outages(&mut failing_over, &tasks));
    let mut ignoring = ChaCha8Rng::seed_from_u64(seed ^ STUBBORN_STREAM);
    faults.extend(stubborn_runs(&mut ignoring));
    // A worker clock stepped back as a poll brings news, from a stream of its own.
    let mut stepping = ChaCha8Rng::seed_from_u64(seed ^ STEP_AT_NEWS_STREAM);
    faults.extend(step_at_news(&mut stepping, workers));
    faults.sort_by_key(|f| f.at_ms);
    // Outages of the Agent Server and of the MCP server lasting minutes, up to a later heal,
    // from a stream of their own.
    let mut peers_down = ChaCha8Rng::seed_from_u64(seed ^ PEER_OUTAGE_STREAM);
    let (outages, chaos_ms) = peer_outages(&mut peers_down, workers);
    faults.extend(outages);
    faults.sort_by_key(|f| f.at_ms);
    // Disguised injections in the servers' texts, from a stream of their own.
    let mut disguising = ChaCha8Rng::seed_from_u64(seed ^ DISGUISE_STREAM);
    crate::disguise::disguise_texts(&mut disguising, &mut tasks);
    // Retention on two seeds in three, from a stream of its own.
    let retention = ChaCha8Rng::seed_from_u64(seed ^ RETENTION_STREAM).random_bool(2.0 / 3.0);
    Plan {
        seed,
        workers,
        lanes,
        chaos_ms,
        tasks,
        user,
        faults,
        gateway: knobs.gateway,
        retention,
    }
}

/// Mixed into the seed for the clock steps as polls bring news ("stepnews" in ASCII).
const STEP_AT_NEWS_STREAM: u64 = 0x7374_6570_6e65_7773;

/// On one seed in two, one worker's wall clock steps back 8 to 30 seconds just as one of its
/// polls finds a task no longer `working`, in the first half of the chaos: the poll write that
/// opens the notification, and hands it off to the same worker's notification pass, is
/// stamped by the stepped clock — the moment the pass's own clock check must refuse it.
fn step_at_news(rng: &mut ChaCha8Rng, workers: u32) -> Option<Fault> {
    if !rng.random_bool(0.5) {
        return None;
    }
    let at_ms = rng.random_range(0..LAST_MS / 2);
    Some(Fault {
        at_ms,
        for_ms: CHAOS_MS - at_ms,
        kind: FaultKind::StepAtNews {
            worker: rng.random_range(0..workers),
            back_ms: rng.random_range(8_000..MAX_BIG_SKEW.as_millis() as u64),
        },
    })
}

/// Mixed into the seed for whether retention runs ("retentio" in ASCII).
const RETENTION_STREAM: u64 = 0x7265_7465_6e74_696f;

/// The last instant scripts and user actions may use.
const LAST_MS: u64 = CHAOS_MS - QUIET_TAIL_MS;

/// Mixed into the seed for the database outages after submits ("storedwn" in ASCII).
const STORE_DOWN_STREAM: u64 = 0x7374_6f72_6564_776e;

/// Mixed into the seed for the disguised injections in remote texts ("disguise" in ASCII).
const DISGUISE_STREAM: u64 = 0x6469_7367_7569_7365;

/// Mixed into the seed for the runs that ignore interrupts ("stubborn" in ASCII).
const STUBBORN_STREAM: u64 = 0x7374_7562_626f_726e;

/// The longest database outage window a plan draws. An acknowledged submit's handle is retried
/// at most [`SUBMIT_RETRY_CAP`] apart, so it is saved before the simulated `submit_grace` ends
/// only if the window, plus that wait, plus slack for lost replies, stays under the grace.
const MAX_STORE_OUTAGE_MS: u64 = 40_000;
const _: () = assert!(
    MAX_STORE_OUTAGE_MS + SUBMIT_RETRY_CAP.as_millis() as u64 + 15_000 < SUBMIT_GRACE_SECS * 1_000
);

/// On half the seeds, one database outage window (a failover) of 5 to 40 seconds — more than
/// five passes, less than the simulated `submit_grace` leaves room for — beginning 0 to 40 ms
/// after a task's submit, so its intent is stored and its handle write meets the outage (or,
/// for the earliest starts, its intent insert does, and nothing is started). Half of those
/// windows flap: the database comes back for 0.2 to 2 seconds midway. Every submit the API
/// acknowledged must still end up tracked (the checker's `acknowledged` rule).
fn store_outages(rng: &mut ChaCha8Rng, tasks: &[TaskPlan]) -> Vec<Fault> {
    if tasks.is_empty() || !rng.random_bool(0.5) {
        return Vec::new();
    }
    let i = rng.random_range(0..tasks.len());
    let at_ms = tasks[i].submit_at_ms + rng.random_range(0..40);
    let window = span(rng, 5_000, MAX_STORE_OUTAGE_MS);
    let down = |at_ms, for_ms| Fault {
        at_ms,
        for_ms,
        kind: FaultKind::StoreDown,
    };
    if !rng.random_bool(0.5) {
        return vec![down(at_ms, window)];
    }
    let (first, gap) = (window / 2, span(rng, 200, 2_000));
    vec![
        down(at_ms, first),
        down(at_ms + first + gap, window - first - gap),
    ]
}

/// Mixed into the seed for the peer outages ("peerdown" in ASCII).
const PEER_OUTAGE_STREAM: u64 = 0x7065_6572_646f_776e;

/// How much longer the chaos lasts on a seed that draws a peer outage: the outage runs up to
/// the heal, so it lasts minutes (DOMAIN §3, §6: waited out, never counted).
const PEER_OUTAGE_EXTRA_MS: u64 = 120_000;

/// On one seed in five each, every worker loses the Agent Server (the gateway) and, apart, the
/// MCP server, from 10 to 50 s into the chaos until the heal, which comes two minutes later
/// than on other seeds: outages of 4 to 5 minutes, through which notifications, cancels and
/// answers stay due. Nothing may be dead-lettered for them, and everything must be delivered
/// after the heal (the checker's lost rule excuses no outage). Returns the faults and the
/// plan's chaos length.
fn peer_outages(rng: &mut ChaCha8Rng, workers: u32) -> (Vec<Fault>, u64) {
    let drawn: Vec<Service> = [Service::Gateway, Service::Mcp]
        .into_iter()
        .filter(|_| rng.random_bool(0.2))
        .collect();
    if drawn.is_empty() {
        return (Vec::new(), CHAOS_MS);
    }
    let chaos_ms = CHAOS_MS + PEER_OUTAGE_EXTRA_MS;
    let mut out = Vec::new();
    for service in drawn {
        let at_ms = rng.random_range(10_000..50_000);
        out.extend((0..workers).map(|worker| Fault {
            at_ms,
            for_ms: chaos_ms - at_ms,
            kind: FaultKind::Partition { worker, service },
        }));
    }
    (out, chaos_ms)
}

/// On two seeds in five, a window in which started runs ignore interrupts and succeed after
/// 33 to 55 seconds: past `max_run_life` (so the engine interrupts them, in vain) but before
/// the failed interrupts spend the failure budget.
fn stubborn_runs(rng: &mut ChaCha8Rng) -> Vec<Fault> {
    if !rng.random_bool(0.4) {
        return Vec::new();
    }
    let run_ms = rng.random_range(33_000..55_000);
    vec![Fault {
        at_ms: rng.random_range(2_000..LAST_MS / 2),
        for_ms: span(rng, 3_000, 15_000),
        kind: FaultKind::StubbornRuns { run_ms },
    }]
}

/// Mixed into the seed for the operator's requeues ("requeue" in ASCII).
const OPERATOR_STREAM: u64 = 0x0072_6571_7565_7565;

/// Mixed into the seed for the users' answers ("answers" in ASCII).
const ANSWER_STREAM: u64 = 0x0061_6e73_7765_7273;

/// Mixed into the seed for the clock skews beyond the lease margin ("bigskew" in ASCII).
const BIG_SKEW_STREAM: u64 = 0x0062_6967_736b_6577;

/// Mixed into the seed for the servers' cancel styles ("cancels" in ASCII).
const CANCEL_STREAM: u64 = 0x0063_616e_6365_6c73;

/// Mixed into the seed for the pauses after answers ("anspause" in ASCII).
const ANSWER_PAUSE_STREAM: u64 = 0x616e_7370_6175_7365;

/// On seven seeds in ten, one or two workers each stall one lane just after the remote server
/// took a user's answer — mostly past the lease, so the outcome write is fenced and a later
/// poll claim finds an attempt without an outcome. Seven in ten of those pauses also step the
/// worker's wall clock back by more than the pause: only the claimer's monotonic clock then
/// shows the lease nearly spent when the lane resumes.
fn pauses_after_answers(rng: &mut ChaCha8Rng, workers: u32) -> Vec<Fault> {
    if !rng.random_bool(0.7) {
        return Vec::new();
    }
    (0..rng.random_range(1..=2))
        .map(|_| {
            let at_ms = rng.random_range(0..LAST_MS / 2);
            let pause_ms = if rng.random_bool(0.8) {
                LEASE_MS + span(rng, 300, 6_000)
            } else {
                span(rng, 1_000, 8_000)
            };
            let clock_back_ms = if rng.random_bool(0.7) {
                pause_ms + span(rng, 1_000, 10_000)
            } else {
                0
            };
            Fault {
                at_ms,
                for_ms: CHAOS_MS - at_ms,
                kind: FaultKind::PauseAfterAnswer {
                    worker: rng.random_range(0..workers),
                    pause_ms,
                    clock_back_ms,
                },
            }
        })
        .collect()
}

/// Mixed into the seed for the graceful restarts ("restart" in ASCII).
const RESTART_STREAM: u64 = 0x0072_6573_7461_7274;

/// On two seeds in five, a worker shuts down gracefully for 3 to 20 seconds; on three in ten,
/// the remote server restarts and forgets the tasks of its legacy side.
fn restarts(rng: &mut ChaCha8Rng, workers: u32) -> Vec<Fault> {
    let mut out = Vec::new();
    if rng.random_bool(0.4) {
        out.push(Fault {
            at_ms: rng.random_range(10_000..LAST_MS),
            for_ms: span(rng, 3_000, 20_000),
            kind: FaultKind::GracefulStop {
                worker: rng.random_range(0..workers),
            },
        });
    }
    if rng.random_bool(0.3) {
        out.push(Fault {
            at_ms: rng.random_range(30_000..LAST_MS),
            for_ms: 10_000,
            kind: FaultKind::RemoteRestart,
        });
    }
    out
}

/// Mixed into the seed for the remote outages of single tasks ("outages" in ASCII).
const OUTAGE_STREAM: u64 = 0x006f_7574_6167_6573;

/// On three seeds in four, one task runs long (it completes late in the chaos) and its remote
/// shard goes down. On most of them twice, each time long enough for tracking to degrade (three
/// failed polls), with a recovery between that outlasts the capped poll backoff, so a poll
/// sees it (degraded, recovered, degraded again); on the others once for one and a half to two
/// and a half minutes up to the heal, so the poll backoff reaches its cap and the first poll
/// after the heal shows whether it stayed there.
fn task_outages(rng: &mut ChaCha8Rng, tasks: &mut [TaskPlan]) -> Vec<Fault> {
    if !rng.random_bool(0.75) || tasks.is_empty() {
        return Vec::new();
    }
    let twice = rng.random_bool(0.75);
    let early: Vec<usize> = (0..tasks.len())
        .filter(|&i| tasks[i].submit_at_ms <= TWICE_DOWN_LATEST_SUBMIT_MS)
        .collect();
    let t = match early.choose(rng) {
        Some(&i) if twice => &mut tasks[i],
        _ => {
            let i = rng.random_range(0..tasks.len());
            &mut tasks[i]
        }
    };
    let twice = twice && t.submit_at_ms <= TWICE_DOWN_LATEST_SUBMIT_MS;
    let ends_ms = if twice {
        LAST_MS - 1
    } else {
        (t.submit_at_ms + rng.random_range(100_000..140_000)).min(LAST_MS - 1)
    };
    t.steps = vec![Step {
        after_ms: ends_ms - t.submit_at_ms,
        status: ScriptStatus::Completed,
        text: Some(Content::Plain("all green".into())),
        questions: 1,
    }];
    t.quirk = None;
    let down = |at_ms: u64, for_ms: u64| Fault {
        at_ms,
        for_ms,
        kind: FaultKind::RemoteDown { task: t.n },
    };
    if twice {
        let first_at = t.submit_at_ms + rng.random_range(3_000..10_000);
        let first_for = rng.random_range(30_000..40_000);
        let second_at = first_at + first_for + rng.random_range(45_000..55_000);
        let second_for = rng.random_range(35_000..45_000);
        vec![down(first_at, first_for), down(second_at, second_for)]
    } else {
        let for_ms = rng.random_range(90_000..150_000);
        vec![down(CHAOS_MS - for_ms, for_ms)]
    }
}

/// The latest submit of a task whose shard goes down twice: both outages and the recovery
/// between them fit before its script ends.
const TWICE_DOWN_LATEST_SUBMIT_MS: u64 = 30_000;

/// Mixed into the seed for the long second outages ("degrade" in ASCII).
const DEGRADE_STREAM: u64 = 0x0064_6567_7261_6465;

/// On most seeds (85 %) whose task's shard goes down twice, the second outage lasts up to the
/// heal (three quarters of a minute to over a minute and a half): long after tracking degrades
/// again, so the second degradation must be notified whatever the faults meanwhile delay (the
/// checker's `degraded` rule). Start times stay as drawn; the task's completion is seen after
/// the heal.
fn long_second_outage(rng: &mut ChaCha8Rng, faults: &mut [Fault]) {
    let mut downs = faults
        .iter_mut()
        .filter(|f| matches!(f.kind, FaultKind::RemoteDown { .. }));
    let (Some(_), Some(second), None) = (downs.next(), downs.next(), downs.next()) else {
        return;
    };
    if rng.random_bool(0.85) {
        second.for_ms = CHAOS_MS.saturating_sub(second.at_ms).max(second.for_ms);
    }
}

/// Mixed into the seed for the doomed notification versions ("doomed" in ASCII).
const DOOM_STREAM: u64 = 0x0000_646f_6f6d_6564;

/// On three seeds in five, the first notification of a task that asks a question is doomed:
/// its runs fail within seconds until the failure budget is spent (a minute or two), and late
/// in that dispatch the owner cancels the task (on a server that cancels at once), so a newer
/// state (cancelled) lands while the doomed snapshot spends its last attempts — and must still
/// be delivered after the dead letter.
/// How long after the question the owner of a doomed task cancels it: about when the doomed
/// snapshot spends its last attempts.
const DOOMED_CANCEL_MS: std::ops::Range<u64> = 40_000..75_000;

fn doomed_version(rng: &mut ChaCha8Rng, tasks: &mut [TaskPlan]) -> Option<(Fault, UserAction)> {
    if !rng.random_bool(0.6) {
        return None;
    }
    let asked_at = |t: &TaskPlan| {
        t.steps
            .iter()
            .find(|s| s.status == ScriptStatus::InputRequired)
            .map(|s| t.submit_at_ms + s.after_ms)
    };
    let asking: Vec<usize> = (0..tasks.len())
        .filter(|&i| tasks[i].quirk.is_none())
        .filter(|&i| asked_at(&tasks[i]).is_some_and(|at| at + DOOMED_CANCEL_MS.end < LAST_MS))
        .collect();
    let t = &mut tasks[*asking.choose(rng)?];
    let cancel_at = asked_at(t)? + rng.random_range(DOOMED_CANCEL_MS);
    t.cancel_style = CancelStyle::Immediate;
    let fault = Fault {
        at_ms: t.submit_at_ms,
        for_ms: CHAOS_MS - t.submit_at_ms,
        kind: FaultKind::DoomedVersion {
            task: t.n,
            run_ms: rng.random_range(1_000..4_000),
        },
    };
    let cancel = UserAction::cancel_once(t.n, cancel_at);
    Some((fault, cancel))
}

/// Mixed into the seed for the users' hostile task names ("names" in ASCII).
const NAME_STREAM: u64 = 0x006e_616d_6573;

/// On two seeds in five, users give about a third of the tasks a hostile name (forged tags
/// and boundary markers after `job-{n}`): the name reaches models in every notification
/// prompt, run context and listing of the task, neutralised.
fn hostile_names(rng: &mut ChaCha8Rng, tasks: &mut [TaskPlan]) {
    if !rng.random_bool(0.4) {
        return;
    }
    for t in tasks.iter_mut() {
        t.hostile_name = rng.random_bool(0.3);
    }
}

/// Mixed into the seed for the tasks the server cancels on its own ("selfcncl" in ASCII).
const SELF_CANCEL_STREAM: u64 = 0x7365_6c66_636e_636c;

/// On three seeds in ten, the server cancels one or two tasks on its own, nobody having asked:
/// the script ends `cancelled` 2 to 30 seconds after its last non-terminal step, in place of
/// the end it had. Tasks a fault is about (an outage, a doomed version) keep their scripts.
/// For some of them the owner cancels too, just after the server did, before the engine saw it.
fn self_cancels(rng: &mut ChaCha8Rng, tasks: &mut [TaskPlan], faults: &[Fault]) -> Vec<UserAction> {
    let mut out = Vec::new();
    if !rng.random_bool(0.3) {
        return out;
    }
    let faulted = |n: u32| {
        faults.iter().any(|f| {
            matches!(f.kind, FaultKind::RemoteDown { task } | FaultKind::DoomedVersion { task, .. } if task == n)
        })
    };
    let candidates: Vec<usize> = (0..tasks.len()).filter(|&i| !faulted(tasks[i].n)).collect();
    for _ in 0..rng.random_range(1..=2) {
        let Some(&i) = candidates.choose(rng) else {
            break;
        };
        let t = &mut tasks[i];
        if t.steps
            .last()
            .is_some_and(|s| s.status == ScriptStatus::Cancelled)
        {
            continue;
        }
        let last_running = t
            .steps
            .iter()
            .rfind(|s| !s.status.is_terminal())
            .map_or(0, |s| s.after_ms);
        let after_ms = last_running + rng.random_range(2_000..30_000);
        let cancelled_at = t.submit_at_ms + after_ms;
        if cancelled_at >= LAST_MS - 1 {
            continue;
        }
        t.steps.retain(|s| !s.status.is_terminal());
        t.steps.push(Step {
            after_ms,
            status: ScriptStatus::Cancelled,
            text: None,
            questions: 1,
        });
        if rng.random_bool(0.4) {
            out.push(UserAction::Cancel {
                task: t.n,
                at_ms: (cancelled_at + rng.random_range(100..3_000)).min(LAST_MS - 1),
                repeats: rng.random_range(0..=1),
                concurrent: false,
                by_name: false,
            });
        }
    }
    out
}

/// How each task's server answers a cancel: most at once, some acknowledge (the task is
/// cancelled seconds later), some are legacy servers that reject a cancel of a finished task.
/// On most seeds a user cancels a legacy-server task just after its script ended — before the
/// engine polled it — so the cancel meets "already terminal" until its budget is spent.
fn cancel_styles(rng: &mut ChaCha8Rng, tasks: &mut [TaskPlan]) -> Vec<UserAction> {
    let mut out = Vec::new();
    for t in tasks.iter_mut() {
        t.cancel_style = match rng.random_range(0..10u32) {
            0..=4 => CancelStyle::Immediate,
            5..=7 => CancelStyle::Acknowledged {
                after_ms: rng.random_range(1_000..10_000),
            },
            _ => CancelStyle::RejectsWhenTerminal,
        };
    }
    if !rng.random_bool(0.7) {
        return out;
    }
    for t in tasks.iter_mut() {
        let ended = t.steps.iter().find(|s| s.status.is_terminal());
        let Some(ended) = ended else { continue };
        let ended_at = t.submit_at_ms + ended.after_ms;
        if ended_at + 2_000 >= LAST_MS || !rng.random_bool(0.5) {
            continue;
        }
        t.cancel_style = CancelStyle::RejectsWhenTerminal;
        out.push(UserAction::Cancel {
            task: t.n,
            at_ms: ended_at + rng.random_range(100..2_000),
            repeats: rng.random_range(0..=2),
            concurrent: false,
            by_name: false,
        });
    }
    out
}

/// Mixed into the seed for the held poll before a cancel ("heldpoll" in ASCII).
const HELD_POLL_STREAM: u64 = 0x6865_6c64_706f_6c6c;

/// On one seed in two with several workers, one worker's calls to the remote server are held
/// on the wire for 6-10 s while a task it polls every second is cancelled and its server
/// acknowledges the cancel: the held poll is still in flight when the cancel's end voids its
/// lease — the moment a second poll must not start (never two remote polls of one task at
/// once).
fn held_poll_then_cancel(
    rng: &mut ChaCha8Rng,
    tasks: &mut [TaskPlan],
    workers: u32,
) -> Option<(UserAction, Fault)> {
    if workers < 2 || tasks.is_empty() || !rng.random_bool(0.5) {
        return None;
    }
    let t = &mut tasks[rng.random_range(0..tasks.len())];
    let hold_at = t.submit_at_ms + rng.random_range(4_000..20_000);
    let cancel_at = hold_at + rng.random_range(1_500..3_000);
    if cancel_at >= LAST_MS {
        return None;
    }
    t.hint_secs = Some(1.0);
    t.cancel_style = CancelStyle::Acknowledged {
        after_ms: rng.random_range(5_000..10_000),
    };
    let hold = Fault {
        at_ms: hold_at,
        for_ms: rng.random_range(6_000..10_000),
        kind: FaultKind::Hold {
            worker: rng.random_range(0..workers),
            service: Service::Mcp,
        },
    };
    let cancel = UserAction::cancel_once(t.n, cancel_at);
    Some((cancel, hold))
}

/// Answers to the questions scripts ask: for most asking steps the owner answers, some time
/// after the step begins — before the engine has seen the question, while it asks, or after
/// the script moved on; for some, another owner tries the victim's exact thread, task id and
/// request id first; for some, the owner answers in the last seconds before the script moves
/// on, so the engine forwards it under a request id the server no longer asks (a real server
/// ignores such an answer without an error).
fn answers(rng: &mut ChaCha8Rng, tasks: &[TaskPlan], owners: u32) -> Vec<UserAction> {
    let mut out = Vec::new();
    for t in tasks {
        for step in t
            .steps
            .iter()
            .filter(|s| s.status == ScriptStatus::InputRequired)
        {
            let asked_at = t.submit_at_ms + step.after_ms;
            if rng.random_bool(0.25) {
                out.push(UserAction::Answer {
                    task: t.n,
                    at_ms: (asked_at + rng.random_range(0..8_000)).min(LAST_MS - 1),
                    by_owner: Some((t.owner + 1) % owners.max(2)),
                    question: 0,
                });
            }
            if rng.random_bool(0.7) {
                out.push(UserAction::Answer {
                    task: t.n,
                    at_ms: (asked_at + rng.random_range(0..8_000)).min(LAST_MS - 1),
                    by_owner: None,
                    question: 0,
                });
            }
            let moves_on = t.steps.iter().find(|s| s.after_ms > step.after_ms);
            if let Some(next) = moves_on.filter(|_| rng.random_bool(0.35)) {
                let moved_at = t.submit_at_ms + next.after_ms;
                let at_ms = moved_at
                    .saturating_sub(rng.random_range(0..3_000))
                    .max(asked_at);
                out.push(UserAction::Answer {
                    task: t.n,
                    at_ms: at_ms.min(LAST_MS - 1),
                    by_owner: None,
                    question: 0,
                });
            }
        }
    }
    out
}

/// Mixed into the seed for the steps that ask several questions ("questns" in ASCII).
const QUESTIONS_STREAM: u64 = 0x0071_7565_7374_6e73;

/// Questions an asking step draws when it asks several at once: enough that one stays open
/// after two were answered, so an earlier one can be answered again while the step still asks.
const SEVERAL: u32 = 3;

/// On two asking steps in five, the step asks [`SEVERAL`] questions at once (one input request
/// naming each), and its owner answers them one after another a few seconds apart, in a drawn
/// order that mostly answers the first one again after the second (DOMAIN §6: each question is
/// answered at most once, whatever was answered in between).
fn several_questions(rng: &mut ChaCha8Rng, tasks: &mut [TaskPlan]) -> Vec<UserAction> {
    let mut out = Vec::new();
    for t in tasks.iter_mut() {
        for step in t.steps.iter_mut() {
            if step.status != ScriptStatus::InputRequired || !rng.random_bool(0.4) {
                continue;
            }
            step.questions = SEVERAL;
            let mut at_ms = t.submit_at_ms + step.after_ms + rng.random_range(1_000..4_000);
            for question in answer_order(rng) {
                out.push(UserAction::Answer {
                    task: t.n,
                    at_ms: at_ms.min(LAST_MS - 1),
                    by_owner: None,
                    question,
                });
                at_ms += rng.random_range(2_000..8_000);
            }
        }
    }
    out
}

/// The order in which an owner answers the [`SEVERAL`] questions of one step: a first, a
/// second, then (seven times in ten) the first again, then the rest.
fn answer_order(rng: &mut ChaCha8Rng) -> Vec<u32> {
    let first = rng.random_range(0..SEVERAL);
    let second = (first + rng.random_range(1..SEVERAL)) % SEVERAL;
    let mut order = vec![first, second];
    if rng.random_bool(0.7) {
        order.push(first);
    }
    order.extend((0..SEVERAL).filter(|q| *q != first && *q != second));
    order
}

/// On four seeds in five, an operator requeues dead letters: of tasks on a deleted thread some
/// time after the deletion (a thread-gone dead letter, which dead-letters again), and of a few
/// tasks late in the run (budget dead letters under faults).
fn requeues(rng: &mut ChaCha8Rng, tasks: &[TaskPlan], user: &[UserAction]) -> Vec<UserAction> {
    let mut out = Vec::new();
    if !rng.random_bool(0.8) {
        return out;
    }
    for a in user {
        if let UserAction::DeleteThread {
            owner,
            thread,
            at_ms,
        } = a
        {
            for t in tasks
                .iter()
                .filter(|t| t.owner == *owner && t.thread == *thread)
            {
                out.push(UserAction::Requeue {
                    task: t.n,
                    at_ms: (at_ms + rng.random_range(5_000..60_000)).min(LAST_MS),
                });
            }
        }
    }
    for _ in 0..rng.random_range(2..=4) {
        let t = &tasks[rng.random_range(0..tasks.len())];
        out.push(UserAction::Requeue {
            task: t.n,
            at_ms: rng.random_range(t.submit_at_ms.clamp(LAST_MS / 2, LAST_MS - 1)..LAST_MS),
        });
    }
    out
}

/// `task_count` tasks of up to `owners` owners (a third in one burst on some seeds), each with
/// a script, and the remote quirks planted on some of them.
fn tasks(rng: &mut ChaCha8Rng, task_count: u32, owners: u32, hostile: &[&str]) -> Vec<TaskPlan> {
    let mut tasks = Vec::new();
    let burst_at = rng
        .random_bool(0.5)
        .then(|| rng.random_range(0..LAST_MS / 3));
    for n in 0..task_count {
        let owner = rng.random_range(0..owners);
        let thread = rng.random_range(0..2u32);
        let submit_at_ms = match burst_at {
            Some(at) if n % 3 == 0 => at,
            _ => rng.random_range(0..LAST_MS / 2),
        };
        let budget = LAST_MS - submit_at_ms;
        tasks.push(TaskPlan {
            n,
            owner,
            thread,
            submit_at_ms,
            hint_secs: rng
                .random_bool(0.3)
                .then(|| f64::from(rng.random_range(1..10u32))),
            steps: script(rng, budget, hostile),
            quirk: None,
            cancel_style: CancelStyle::Immediate,
            hostile_name: false,
        });
    }
    plant_quirks(rng, &mut tasks);
    tasks
}

/// Plants each remote quirk, with some chance, on a task that has none yet.
fn plant_quirks(rng: &mut ChaCha8Rng, tasks: &mut [TaskPlan]) {
    let task_count = tasks.len();
    for kind in QUIRKS {
        if rng.random_bool(0.3) {
            let t = &mut tasks[rng.random_range(0..task_count)];
            if t.quirk.is_none() {
                let budget = LAST_MS - t.submit_at_ms;
                t.quirk = Some(Quirk {
                    after_ms: rng.random_range(0..budget.max(1) / 2),
                    kind,
                });
            }
        }
    }
}

/// Cancels (own and foreign), a thread deletion and listings, timed after the tasks' submits.
fn user_actions(rng: &mut ChaCha8Rng, tasks: &[TaskPlan], owners: u32) -> Vec<UserAction> {
    let mut user = Vec::new();
    if rng.random_bool(0.75) {
        for _ in 0..rng.random_range(1..=4) {
            let t = &tasks[rng.random_range(0..tasks.len())];
            user.push(UserAction::Cancel {
                task: t.n,
                at_ms: (t.submit_at_ms + rng.random_range(1_000..30_000)).min(LAST_MS),
                repeats: rng.random_range(0..=3),
                concurrent: rng.random_bool(0.3),
                by_name: rng.random_bool(0.3),
            });
        }
    }
    if rng.random_bool(0.4) {
        for _ in 0..rng.random_range(1..=2) {
            let t = &tasks[rng.random_range(0..tasks.len())];
            user.push(UserAction::ForeignCancel {
                task: t.n,
                by_owner: (t.owner + 1) % owners.max(2),
                at_ms: (t.submit_at_ms + rng.random_range(1_000..30_000)).min(LAST_MS),
            });
        }
    }
    if rng.random_bool(0.3) {
        let t = &tasks[rng.random_range(0..tasks.len())];
        user.push(UserAction::DeleteThread {
            owner: t.owner,
            thread: t.thread,
            at_ms: rng.random_range(t.submit_at_ms..LAST_MS),
        });
    }
    for t in tasks {
        if rng.random_bool(0.3) {
            user.push(UserAction::List {
                owner: t.owner,
                thread: t.thread,
                at_ms: rng.random_range(t.submit_at_ms..LAST_MS),
            });
        }
    }

    user
}

/// Text for a scripted status. Only results may be oversized: an oversized input request is a
/// protocol error, which makes the task terminal for the engine but not for the server — such
/// breaches are planned as absorbing quirks instead.
fn content(
    rng: &mut ChaCha8Rng,
    hostile: &[&str],
    plain: &str,
    may_be_oversized: bool,
) -> Option<Content> {
    if hostile.is_empty() || rng.random_bool(0.5) {
        return Some(Content::Plain(plain.to_owned()));
    }
    Some(match *hostile.choose(rng).unwrap_or(&"plain") {
        "oversized" if may_be_oversized => Content::Oversized(rng.random_range(8_001..12_000)),
        "nul" => Content::NulBytes(plain.to_owned()),
        "invalid_utf8" => Content::InvalidUtf8(vec![b'o', b'k', 0xff, 0xfe, b'!', 0xc3]),
        "forged" => Content::ForgedTags,
        "secrets" => Content::EchoSecrets,
        _ => Content::Plain(plain.to_owned()),
    })
}

fn script(rng: &mut ChaCha8Rng, budget_ms: u64, hostile: &[&str]) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut at = 0;
    let flaps = rng.random_range(0..=3u32);
    for i in 0..flaps {
        at += rng.random_range(2_000..20_000);
        if at >= budget_ms {
            return steps;
        }
        let status = if i % 2 == 0 {
            ScriptStatus::InputRequired
        } else {
            ScriptStatus::Working
        };
        let text = (status == ScriptStatus::InputRequired)
            .then(|| content(rng, hostile, "which branch?", false))
            .flatten();
        steps.push(Step {
            after_ms: at,
            status,
            text,
            questions: 1,
        });
    }
    at += rng.random_range(2_000..40_000);
    if at < budget_ms {
        let end = match rng.random_range(0..100) {
            0..60 => Some((ScriptStatus::Completed, "all green")),
            60..75 => Some((ScriptStatus::Failed, "build broke")),
            75..85 => Some((ScriptStatus::InputRequired, "need approval")),
            _ => None,
        };
        if let Some((status, plain)) = end {
            if steps.last().is_none_or(|s| s.status != status) {
                let text = content(rng, hostile, plain, status == ScriptStatus::Completed);
                steps.push(Step {
                    after_ms: at,
                    status,
                    text,
                    questions: 1,
                });
            }
        }
    }
    steps
}

/// Remote misbehaviours the swarm may plant, each on one task of a seed.
const QUIRKS: [QuirkKind; 7] = [
    QuirkKind::UnknownTask,
    QuirkKind::NanHint,
    QuirkKind::WrongTaskId,
    QuirkKind::UnknownStatus,
    QuirkKind::OversizedInputRequest,
    QuirkKind::OversizedArtifact,
    QuirkKind::DuplicateHandle,
];

fn fault(rng: &mut ChaCha8Rng, family: Family, workers: u32, lanes: u32) -> Fault {
    let worker = rng.random_range(0..workers);
    let service = *Service::ALL.choose(rng).unwrap_or(&Service::Db);
    let at_ms = rng.random_range(2_000..LAST_MS);
    let (for_ms, kind) = match family {
        Family::Crash => (span(rng, 3_000, 40_000), FaultKind::Crash { worker }),
        Family::Pause => pause(rng, worker, lanes),
        Family::Partition => {
            let for_ms = span(rng, 2_000, 30_000);
            (for_ms, FaultKind::Partition { worker, service })
        }
        Family::Hold => (
            span(rng, 2_000, 20_000),
            FaultKind::Hold { worker, service },
        ),
        Family::LoseDb => lose_replies(rng, Service::Db, 2..=5),
        Family::LoseOther => {
            let service = if rng.random_bool(0.5) {
                Service::Gateway
            } else {
                Service::Mcp
            };
            lose_replies(rng, service, 1..=4)
        }
        Family::Latency => {
            let for_ms = span(rng, 5_000, 30_000);
            let max_ms = rng.random_range(50..1_500);
            (for_ms, FaultKind::Latency { max_ms })
        }
        Family::Skew => skew(rng, worker),
        Family::GatewayBusy => (span(rng, 10_000, 60_000), FaultKind::GatewayBusy),
        Family::GatewayErrors => {
            let for_ms = span(rng, 5_000, 30_000);
            let after_commit = rng.random_bool(0.5);
            (for_ms, FaultKind::GatewayErrors { after_commit })
        }
        Family::LookupErrors => (span(rng, 5_000, 20_000), FaultKind::LookupErrors),
        Family::LostRuns => (span(rng, 5_000, 20_000), FaultKind::LostRuns),
        Family::SlowRuns => {
            let for_ms = span(rng, 10_000, 40_000);
            let run_ms = rng.random_range(5_000..25_000);
            (for_ms, FaultKind::SlowRuns { run_ms })
        }
        Family::BadRuns => bad_runs(rng),
        Family::StuckRuns => (span(rng, 3_000, 15_000), FaultKind::StuckRuns),
        Family::RefuseInserts => (span(rng, 3_000, 15_000), FaultKind::RefuseInserts),
        Family::RemoteErrors => (span(rng, 10_000, 60_000), FaultKind::RemoteErrors),
        Family::SlowRemote => {
            let for_ms = span(rng, 10_000, 40_000);
            let delay_ms = rng.random_range(1_000..4_000);
            (for_ms, FaultKind::SlowRemote { delay_ms })
        }
    };
    Fault {
        at_ms,
        for_ms,
        kind,
    }
}

/// A duration in `lo..hi` milliseconds.
fn span(rng: &mut ChaCha8Rng, lo: u64, hi: u64) -> u64 {
    rng.random_range(lo..hi)
}

/// A pause of one lane: half of them outlive a lease, half stall within it.
fn pause(rng: &mut ChaCha8Rng, worker: u32, lanes: u32) -> (u64, FaultKind) {
    let length = if rng.random_bool(0.5) {
        LEASE_MS + span(rng, 300, 6_000)
    } else {
        span(rng, 1_000, 8_000)
    };
    let lane = rng.random_range(0..lanes);
    (length, FaultKind::Pause { worker, lane })
}

/// Replies of `service` lost after the work, one in `one_in` (drawn from `period`).
fn lose_replies(
    rng: &mut ChaCha8Rng,
    service: Service,
    period: std::ops::RangeInclusive<u32>,
) -> (u64, FaultKind) {
    let for_ms = span(rng, 10_000, 60_000);
    let one_in = rng.random_range(period);
    (for_ms, FaultKind::LoseReplies { service, one_in })
}

/// A worker clock off by 0.3 to 3 seconds, either way.
fn skew(rng: &mut ChaCha8Rng, worker: u32) -> (u64, FaultKind) {
    let magnitude = rng.random_range(300..3_000) as i64;
    let for_ms = span(rng, 20_000, 90_000);
    let skew_ms = if rng.random_bool(0.5) {
        magnitude
    } else {
        -magnitude
    };
    (for_ms, FaultKind::Skew { worker, skew_ms })
}

/// On two seeds in five, one worker clock off by 8 to 30 seconds, either way, for 20 to 60
/// seconds: more than the lease margin (`min_lease_left` minus the longest call deadline), so
/// only the engine's skew guard keeps that worker from taking leases that look expired to it
/// alone while their holders' calls still run.
fn big_skew(rng: &mut ChaCha8Rng, workers: u32) -> Option<Fault> {
    if !rng.random_bool(0.4) {
        return None;
    }
    let worker = rng.random_range(0..workers);
    let at_ms = rng.random_range(2_000..LAST_MS);
    let for_ms = span(rng, 20_000, 60_000);
    let magnitude = rng.random_range(8_000..MAX_BIG_SKEW.as_millis() as i32) as i64;
    let skew_ms = if rng.random_bool(0.5) {
        magnitude
    } else {
        -magnitude
    };
    Some(Fault {
        at_ms,
        for_ms,
        kind: FaultKind::Skew { worker, skew_ms },
    })
}

/// Runs that end badly, one way for the whole window.
fn bad_runs(rng: &mut ChaCha8Rng) -> (u64, FaultKind) {
    let end = *[BadEnd::Error, BadEnd::Timeout, BadEnd::Interrupted]
        .choose(rng)
        .unwrap_or(&BadEnd::Error);
    (span(rng, 10_000, 40_000), FaultKind::BadRuns { end })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_plan_and_plans_are_valid() {
        for seed in 0..200 {
            let a = generate(seed, &Knobs::default());
            assert_eq!(a, generate(seed, &Knobs::default()));
            a.check().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            assert_eq!(Plan::from_json(&a.to_json()), Ok(a));
        }
        assert_ne!(
            generate(1, &Knobs::default()),
            generate(2, &Knobs::default())
        );
    }

    #[test]
    fn some_seeds_have_a_task_the_server_cancels_and_no_faulted_task_is_one() {
        let mut seeds = 0;
        for seed in 0..200 {
            let p = generate(seed, &Knobs::default());
            let cancelled: Vec<&TaskPlan> = p
                .tasks
                .iter()
                .filter(|t| t.steps.iter().any(|s| s.status == ScriptStatus::Cancelled))
                .collect();
            seeds += usize::from(!cancelled.is_empty());
            for t in cancelled {
                assert!(
                    !p.faults.iter().any(|f| matches!(
                        f.kind,
                        FaultKind::RemoteDown { task } | FaultKind::DoomedVersion { task, .. }
                            if task == t.n
                    )),
                    "seed {seed}: task {} has a fault and a self-cancel",
                    t.n
                );
            }
        }
        assert!((40..=100).contains(&seeds), "{seeds} of 200 seeds");
    }

    #[test]
    fn knobs_fix_workers_and_tasks() {
        let p = generate(
            5,
            &Knobs {
                workers: Some(7),
                tasks: Some(31),
                gateway: GatewayMode::Ledger,
            },
        );
        assert_eq!((p.workers, p.tasks.len()), (7, 31));
        let lg = generate(
            5,
            &Knobs {
                workers: Some(7),
                tasks: Some(31),
                gateway: GatewayMode::Langgraph,
            },
        );
        assert_eq!(lg.gateway, GatewayMode::Langgraph);
        assert_eq!(
            (&lg.tasks, &lg.faults),
            (&p.tasks, &p.faults),
            "same workload and faults"
        );
        assert!(
            !p.to_json().contains("\"gateway\":")
                && lg.to_json().contains("\"gateway\": \"langgraph\"")
        );
    }
}
