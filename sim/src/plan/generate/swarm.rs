//! The swarm draw: how big a seed's world is, and which fault families and kinds of hostile
//! content it switches on.

use super::{span, Knobs, LAST_MS};
use crate::plan::fault::Fault;
use crate::plan::fault::{BadEnd, FaultKind, Service};
use crate::plan::timing::LEASE_MS;
use crate::plan::Content;
use rand::seq::IndexedRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// What the swarm drew for one seed: the size of the world and what is switched on.
pub(super) struct Swarm {
    /// Worker hosts.
    pub workers: u32,
    /// Lanes per worker (not drawn).
    pub lanes: u32,
    /// Tasks.
    pub task_count: u32,
    /// Owners the tasks belong to (1 to 3).
    pub owners: u32,
    /// The fault families switched on, in [`FAMILIES`] order.
    pub families: Vec<Family>,
    /// The kinds of hostile content switched on, in [`Hostile::ALL`] order.
    pub hostile: Vec<Hostile>,
}

impl Swarm {
    /// The swarm of the seed whose first stream is `rng`: these are that stream's first draws
    /// (workers and the task count only when `knobs` leave them open, then the owners, one coin
    /// per family and one per kind of hostile content).
    pub fn draw(rng: &mut ChaCha8Rng, knobs: &Knobs) -> Swarm {
        let workers = knobs
            .workers
            .unwrap_or_else(|| *[1, 1, 2, 2, 3, 3, 4].choose(rng).unwrap_or(&3));
        let task_count = knobs.tasks.unwrap_or_else(|| rng.random_range(6..=14));
        let owners = rng.random_range(1..=3u32);
        let families = FAMILIES
            .iter()
            .copied()
            .filter(|_| rng.random_bool(0.5))
            .collect();
        let hostile = Hostile::ALL
            .iter()
            .copied()
            .filter(|_| rng.random_bool(0.5))
            .collect();
        Swarm {
            workers,
            lanes: 2,
            task_count,
            owners,
            families,
            hostile,
        }
    }
}

/// Families of faults the swarm switches on or off per seed; each draws kinds of its own (see
/// [`Family::of`]).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(super) enum Family {
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

/// Every family, in the order the swarm tosses their coins (changing it changes every seed).
pub(super) const FAMILIES: [Family; 18] = [
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

impl Family {
    /// The swarm family that draws faults of `kind`, or `None` for a kind only a pass on a
    /// stream of its own draws (a timed fault of `faults.rs` or a scenario). Some kinds are
    /// drawn both ways (partitions, holds, skews). No catch-all arm: a new kind does not
    /// compile until it is given a family or `None`.
    pub fn of(kind: &FaultKind) -> Option<Family> {
        Some(match kind {
            FaultKind::Crash { .. } => Family::Crash,
            FaultKind::Pause { .. } => Family::Pause,
            FaultKind::Partition { .. } => Family::Partition,
            FaultKind::Hold { .. } => Family::Hold,
            FaultKind::LoseReplies {
                service: Service::Db,
                ..
            } => Family::LoseDb,
            FaultKind::LoseReplies {
                service: Service::Mcp | Service::Gateway,
                ..
            } => Family::LoseOther,
            FaultKind::Latency { .. } => Family::Latency,
            FaultKind::Skew { .. } => Family::Skew,
            FaultKind::GatewayBusy => Family::GatewayBusy,
            FaultKind::GatewayErrors { .. } => Family::GatewayErrors,
            FaultKind::LookupErrors => Family::LookupErrors,
            FaultKind::LostRuns => Family::LostRuns,
            FaultKind::SlowRuns { .. } => Family::SlowRuns,
            FaultKind::BadRuns { .. } => Family::BadRuns,
            FaultKind::RemoteErrors => Family::RemoteErrors,
            FaultKind::SlowRemote { .. } => Family::SlowRemote,
            FaultKind::StuckRuns => Family::StuckRuns,
            FaultKind::RefuseInserts => Family::RefuseInserts,
            FaultKind::GracefulStop { .. }
            | FaultKind::RemoteRestart
            | FaultKind::PauseAfterAnswer { .. }
            | FaultKind::StepAtNews { .. }
            | FaultKind::StubbornRuns { .. }
            | FaultKind::StoreDown
            | FaultKind::DoomedVersion { .. }
            | FaultKind::RemoteDown { .. }
            | FaultKind::LostCreateAcks { .. } => return None,
        })
    }
}

/// Kinds of hostile content the swarm switches on or off per seed; a scripted text is plain or
/// one of the kinds switched on.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(super) enum Hostile {
    /// More characters than the result preview keeps (results only).
    Oversized,
    /// NUL bytes inside the text.
    Nul,
    /// Bytes that are not UTF-8.
    InvalidUtf8,
    /// Forged closing tags and boundary markers.
    Forged,
    /// The remote's own secrets echoed back.
    Secrets,
    /// Plain text after all: switched on, it makes the others rarer.
    Plain,
}

impl Hostile {
    /// Every kind, in the order the swarm tosses their coins (changing it changes every seed).
    pub const ALL: [Hostile; 6] = [
        Hostile::Oversized,
        Hostile::Nul,
        Hostile::InvalidUtf8,
        Hostile::Forged,
        Hostile::Secrets,
        Hostile::Plain,
    ];

    /// Content of this kind for a text that would say `plain`. Only an oversized one draws (its
    /// length); where it may not be oversized (`may_be_oversized` false) the text stays plain.
    pub fn content(self, rng: &mut ChaCha8Rng, plain: &str, may_be_oversized: bool) -> Content {
        match self {
            Hostile::Oversized if may_be_oversized => {
                Content::Oversized(rng.random_range(8_001..12_000))
            }
            Hostile::Oversized | Hostile::Plain => Content::Plain(plain.to_owned()),
            Hostile::Nul => Content::NulBytes(plain.to_owned()),
            Hostile::InvalidUtf8 => Content::InvalidUtf8(vec![b'o', b'k', 0xff, 0xfe, b'!', 0xc3]),
            Hostile::Forged => Content::ForgedTags,
            // Its pieces are drawn by the echo pass, from a stream of its own.
            Hostile::Secrets => Content::EchoSecrets(Vec::new()),
        }
    }
}

/// One to three faults of each family switched on, in family order: the last draws of the
/// swarm stream `rng`, after the users' actions.
pub(super) fn families(rng: &mut ChaCha8Rng, swarm: &Swarm) -> Vec<Fault> {
    let mut faults = Vec::new();
    for &family in &swarm.families {
        for _ in 0..rng.random_range(1..=3) {
            faults.push(fault(rng, family, swarm.workers, swarm.lanes));
        }
    }
    faults
}

/// A fault of `family` on one of `workers` workers (and `lanes` lanes), starting between 2 s
/// into the chaos and the quiet tail. Its kind is one `family` draws ([`Family::of`]).
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
    debug_assert_eq!(Family::of(&kind), Some(family), "{kind:?}");
    Fault {
        at_ms,
        for_ms,
        kind,
    }
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
    use rand_chacha::rand_core::SeedableRng;

    #[test]
    fn every_family_draws_kinds_of_its_own() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for family in FAMILIES {
            for _ in 0..50 {
                let f = fault(&mut rng, family, 3, 2);
                assert_eq!(Family::of(&f.kind), Some(family), "{f:?}");
            }
        }
    }

    #[test]
    fn families_are_listed_once_each() {
        for (i, f) in FAMILIES.iter().enumerate() {
            assert!(!FAMILIES[..i].contains(f), "{f:?} listed twice");
        }
        for (i, h) in Hostile::ALL.iter().enumerate() {
            assert!(!Hostile::ALL[..i].contains(h), "{h:?} listed twice");
        }
    }
}
