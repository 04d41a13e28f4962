//! Lost create acknowledgements ([`Stream::LostCreateAcks`](super::Stream::LostCreateAcks)):
//! on some seeds the launcher drops the replies of some keys' first runs for a while. In
//! `langgraph` mode the next listing of the thread misses such a run, so the next look of its
//! key finds nothing and — once the unacknowledged run has ended and freed the thread —
//! creates a second run, which the look after that create sees beside the first: the race the
//! launcher's "two looks, oldest wins" exists for (`two_runs_one_key`). In `ledger` mode the
//! retried launch finds its run again.

use super::{span, CHAOS_MS};
use crate::plan::fault::{Fault, FaultKind};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// The share of seeds with a window of lost create replies.
const SHARE: f64 = 0.7;

/// The shortest and longest window.
const WINDOW_MS: (u64, u64) = (80_000, 150_000);

/// On seven seeds in ten, one window of 80 to 150 s, starting 5 s or more into the run and
/// ending before the chaos phase does, in which the launcher drops the reply of one key's first
/// run in 1 or 2 (where no other fault threatens the race, see the gateway's `runs.rs`):
/// drawn from `rng`, the pass's own stream.
pub(super) fn lost_create_acks(rng: &mut ChaCha8Rng) -> Option<Fault> {
    if !rng.random_bool(SHARE) {
        return None;
    }
    let at_ms = rng.random_range(5_000..CHAOS_MS - WINDOW_MS.1);
    let for_ms = span(rng, WINDOW_MS.0, WINDOW_MS.1);
    let one_in = rng.random_range(1..=2);
    Some(Fault {
        at_ms,
        for_ms,
        kind: FaultKind::LostCreateAcks { one_in },
    })
}

#[cfg(test)]
mod tests {
    use super::super::{generate, Knobs, Stream};
    use super::*;
    use crate::plan::gateway_mode::GatewayMode;

    #[test]
    fn seven_seeds_in_ten_have_one_valid_window_in_the_chaos_phase() {
        let mut seeds = 0;
        for seed in 0..500 {
            let Some(f) = lost_create_acks(&mut Stream::LostCreateAcks.rng(seed)) else {
                continue;
            };
            seeds += 1;
            assert!(
                f.at_ms >= 5_000 && f.at_ms + f.for_ms <= CHAOS_MS,
                "seed {seed}"
            );
            assert!(
                (WINDOW_MS.0..WINDOW_MS.1).contains(&f.for_ms),
                "seed {seed}"
            );
            assert_eq!(f.kind.check(1, 1), Ok(()), "seed {seed}");
        }
        assert!((315..=385).contains(&seeds), "{seeds} of 500 seeds");
    }

    #[test]
    fn plans_carry_the_window_in_either_gateway_mode() {
        let mut seeds = 0;
        for seed in 0..100 {
            let knobs = |gateway| Knobs {
                gateway,
                ..Knobs::default()
            };
            let plan = generate(seed, &knobs(GatewayMode::Langgraph));
            assert_eq!(plan.check(), Ok(()), "seed {seed}");
            let windows: Vec<&Fault> = plan
                .faults
                .iter()
                .filter(|f| matches!(f.kind, FaultKind::LostCreateAcks { .. }))
                .collect();
            let drawn = lost_create_acks(&mut Stream::LostCreateAcks.rng(seed));
            assert_eq!(windows, drawn.iter().collect::<Vec<_>>(), "seed {seed}");
            assert_eq!(
                plan.faults,
                generate(seed, &knobs(GatewayMode::Ledger)).faults
            );
            seeds += windows.len();
        }
        assert!(seeds > 50, "{seeds} of 100 seeds");
    }
}
