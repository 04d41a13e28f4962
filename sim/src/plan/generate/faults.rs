//! Timed faults: those of the fault families the swarm switched on, drawn on the swarm stream,
//! and those of passes added later, each on a stream of its own. (Faults built around one
//! task's script are scenarios, in `scenarios.rs`.)

use super::lost_create_acks::lost_create_acks;
use super::span;
use super::streams::Stream;
use super::{CHAOS_MS, LAST_MS};
use crate::plan::fault::*;
use crate::plan::timing::{LEASE_MS, MAX_BIG_SKEW, SUBMIT_GRACE_SECS};
use crate::plan::TaskPlan;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use tasklatch_core::policy::SUBMIT_RETRY_CAP;

/// The timed faults of streams of their own, kept apart by pass: [`super::generate`] orders
/// them among the plan's other faults.
pub(super) struct Timed {
    /// One worker clock off by more than the lease margin ([`Stream::BigSkew`]).
    pub big_skew: Option<Fault>,
    /// Two workers' clocks skewed in opposite directions at once ([`Stream::OpposedSkews`]).
    pub opposed_skews: Vec<Fault>,
    /// Lanes stalled after an answer ([`Stream::AnswerPauses`]).
    pub answer_pauses: Vec<Fault>,
    /// Graceful restarts ([`Stream::Restarts`]).
    pub restarts: Vec<Fault>,
    /// Database outages after a submit ([`Stream::StoreOutages`]).
    pub store_outages: Vec<Fault>,
    /// Runs that ignore interrupts ([`Stream::StubbornRuns`]).
    pub stubborn_runs: Option<Fault>,
    /// A clock step as a poll brings news ([`Stream::StepAtNews`]).
    pub step_at_news: Option<Fault>,
    /// Peer outages up to the heal ([`Stream::PeerOutages`]).
    pub peer_outages: Vec<Fault>,
    /// Lost replies of keys' first runs, listed late ([`Stream::LostCreateAcks`]).
    pub lost_create_acks: Option<Fault>,
    /// The plan's chaos length: longer when there are peer outages.
    pub chaos_ms: u64,
}

impl Timed {
    /// The timed faults of `seed` for `workers` workers; the database outages follow the
    /// submits of `tasks` (only their submit times are read).
    pub fn draw(seed: u64, workers: u32, tasks: &[TaskPlan]) -> Timed {
        let (peer_outages, chaos_ms) = peer_outages(&mut Stream::PeerOutages.rng(seed), workers);
        Timed {
            big_skew: big_skew(&mut Stream::BigSkew.rng(seed), workers),
            opposed_skews: opposed_skews(&mut Stream::OpposedSkews.rng(seed), workers),
            answer_pauses: pauses_after_answers(&mut Stream::AnswerPauses.rng(seed), workers),
            restarts: restarts(&mut Stream::Restarts.rng(seed), workers),
            store_outages: store_outages(&mut Stream::StoreOutages.rng(seed), tasks),
            stubborn_runs: stubborn_runs(&mut Stream::StubbornRuns.rng(seed)),
            step_at_news: step_at_news(&mut Stream::StepAtNews.rng(seed), workers),
            peer_outages,
            lost_create_acks: lost_create_acks(&mut Stream::LostCreateAcks.rng(seed)),
            chaos_ms,
        }
    }
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

/// On one seed in five with several workers, two of them run skewed in opposite directions
/// over the same 20 to 60 seconds, each by 0.3 to 3 seconds: one sees leases and due times
/// early, the other late, so a lease one of them takes as expired the other still holds for
/// longer than the skew of either alone.
fn opposed_skews(rng: &mut ChaCha8Rng, workers: u32) -> Vec<Fault> {
    if workers < 2 || !rng.random_bool(0.2) {
        return Vec::new();
    }
    let ahead = rng.random_range(0..workers);
    let behind = (ahead + rng.random_range(1..workers)) % workers;
    let at_ms = rng.random_range(2_000..LAST_MS);
    let for_ms = span(rng, 20_000, 60_000);
    [(ahead, 1), (behind, -1)]
        .into_iter()
        .map(|(worker, sign)| Fault {
            at_ms,
            for_ms,
            kind: FaultKind::Skew {
                worker,
                skew_ms: sign * rng.random_range(300..3_000i64),
            },
        })
        .collect()
}

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

/// On two seeds in five, a window in which started runs ignore interrupts and succeed after
/// 33 to 55 seconds: past `max_run_life` (so the engine interrupts them, in vain) but before
/// the failed interrupts spend the failure budget.
fn stubborn_runs(rng: &mut ChaCha8Rng) -> Option<Fault> {
    if !rng.random_bool(0.4) {
        return None;
    }
    let run_ms = rng.random_range(33_000..55_000);
    Some(Fault {
        at_ms: rng.random_range(2_000..LAST_MS / 2),
        for_ms: span(rng, 3_000, 15_000),
        kind: FaultKind::StubbornRuns { run_ms },
    })
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;

    #[test]
    fn opposed_skews_pair_two_workers_one_ahead_one_behind_over_one_window() {
        let mut drawn = 0;
        for seed in 0..200 {
            let pair = opposed_skews(&mut ChaCha8Rng::seed_from_u64(seed), 3);
            let [a, b] = &pair[..] else {
                assert!(pair.is_empty(), "seed {seed}: {pair:?}");
                continue;
            };
            drawn += 1;
            assert_eq!((a.at_ms, a.for_ms), (b.at_ms, b.for_ms), "seed {seed}");
            let (
                FaultKind::Skew {
                    worker: w,
                    skew_ms: ahead,
                },
                FaultKind::Skew {
                    worker: v,
                    skew_ms: behind,
                },
            ) = (&a.kind, &b.kind)
            else {
                panic!("seed {seed}: {pair:?}");
            };
            assert!(w != v && *ahead > 0 && *behind < 0, "seed {seed}: {pair:?}");
        }
        assert!((20..=70).contains(&drawn), "{drawn} pairs in 200 seeds");
        assert!(opposed_skews(&mut ChaCha8Rng::seed_from_u64(1), 1).is_empty());
    }
}
