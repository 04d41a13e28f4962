//! A quiet long outage: on half the seeds whose one task's shard goes down once, for two
//! minutes or more, nothing else that may keep workers from polling happens from the outage's
//! fifth failed poll on. The poll backoff then reaches its cap undisturbed, and the gap before
//! the first poll after the heal is judged by the policy alone (the checker's `spacing` rule
//! excuses every gap a poll-delaying fault overlaps): a backoff past its cap shows on these
//! seeds, where the swarm's other faults would excuse it on nearly every other.

use crate::plan::fault::{Fault, FaultKind};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// A single outage at least this long is the long one of the task-outage scenario.
const LONG_OUTAGE_MS: u64 = 100_000;

/// The quiet starts this long after the outage does: by then the failed polls have backed off
/// 5 + 10 + 20 s, and the fifth one, after which an uncapped delay first exceeds the cap, is due.
const QUIET_FROM_MS: u64 = 30_000;

/// The quiet lasts this long past the outage's start: beyond the first poll after the heal even
/// under a doubled delay (the fifth failure at about 75 s, then 80 s).
const QUIET_UNTIL_MS: u64 = 190_000;

/// On one seed in two whose `faults` hold exactly one remote outage of at least
/// [`LONG_OUTAGE_MS`], drops every fault that excuses late polls and overlaps the quiet window
/// of that outage. Keeps the order of the faults it leaves.
pub(super) fn quiet_long_outage(rng: &mut ChaCha8Rng, faults: &mut Vec<Fault>) {
    let mut downs = faults
        .iter()
        .filter(|f| matches!(f.kind, FaultKind::RemoteDown { .. }));
    let (Some(down), None) = (downs.next(), downs.next()) else {
        return;
    };
    if down.for_ms < LONG_OUTAGE_MS || !rng.random_bool(0.5) {
        return;
    }
    let from = down.at_ms + QUIET_FROM_MS;
    let until = down.at_ms + QUIET_UNTIL_MS;
    faults.retain(|f| !f.kind.excuse().polls || f.at_ms + f.for_ms <= from || f.at_ms >= until);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::generate::{generate, Knobs};

    #[test]
    fn some_seeds_keep_a_long_outage_quiet_and_quiet_means_no_poll_delaying_fault() {
        let mut quiet = 0;
        for seed in 0..200 {
            let p = generate(seed, &Knobs::default());
            let downs: Vec<&Fault> = p
                .faults
                .iter()
                .filter(|f| matches!(f.kind, FaultKind::RemoteDown { .. }))
                .collect();
            let [down] = downs[..] else { continue };
            if down.for_ms < LONG_OUTAGE_MS {
                continue;
            }
            let (from, until) = (down.at_ms + QUIET_FROM_MS, down.at_ms + QUIET_UNTIL_MS);
            let delaying = p
                .faults
                .iter()
                .filter(|f| f.kind.excuse().polls && f.at_ms + f.for_ms > from && f.at_ms < until);
            quiet += usize::from(delaying.count() == 0);
        }
        assert!(
            (15..=60).contains(&quiet),
            "{quiet} quiet outages in 200 seeds"
        );
    }
}
