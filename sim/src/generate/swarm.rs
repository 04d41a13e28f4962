//! The swarm draw: how big a seed's world is, and which fault families and kinds of hostile
//! content it switches on.

use super::Knobs;
use crate::fault::{FaultKind, Service};
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
            | FaultKind::RemoteDown { .. } => return None,
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
            Hostile::Secrets => Content::EchoSecrets,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
