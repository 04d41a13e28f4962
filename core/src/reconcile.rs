//! "Two looks, oldest wins": which run delivers an idempotency key on a launcher peer that has
//! no idempotency of its own (the LangGraph Agent Server: two creates with the same key make
//! two runs).
//!
//! A launcher over such a peer looks the key up among the thread's runs before it creates a run
//! (the first look) and again right after a create (the second look). Both looks hand what they
//! saw to [`oldest_wins`]:
//!
//! - the **delivery** is the oldest run carrying the key, in the server's order (its creation
//!   time, then its run id) — the run every launcher that looks settles on, whoever created it;
//! - every other run carrying the key that the look saw, and the launcher's own new run if it
//!   is not the delivery, is **cancelled** (rolled back) — they are duplicates by definition;
//! - a look that saw no run and made none decides nothing (the caller creates).
//!
//! Pure: no I/O, no clock. Used by the simulation's launcher and by the real Agent Server
//! launcher, so both follow one rule.

use crate::ids::RunId;
use crate::mutation::{self, planted, Mutant};

/// What a look decided.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Decision {
    /// The run that delivers the key (report it to the engine).
    pub deliver: RunId,
    /// Runs carrying the key to cancel with rollback, oldest first (never `deliver`).
    pub cancel: Vec<RunId>,
}

/// Decides which run delivers a key. `listed` are the runs carrying the key that a look saw,
/// each with its order in the server (`K`: creation time then run id, or anything ordering
/// runs the way the server created them); `mine` is the run this launcher call created, if
/// any — it counts even if the listing missed it (then it is taken as the newest). `None`
/// only when there is no run at all.
pub fn oldest_wins<K: Ord + Clone>(
    mine: Option<&RunId>,
    listed: &[(K, RunId)],
) -> Option<Decision> {
    let decision = oldest_of(mine, listed);
    mutation::substitute(Mutant::LauncherSkipsReconciliation, decision, |decision| {
        planted::own_run_delivers(decision, mine)
    })
}

/// [`oldest_wins`] as the rule says it.
fn oldest_of<K: Ord + Clone>(mine: Option<&RunId>, listed: &[(K, RunId)]) -> Option<Decision> {
    let mut runs: Vec<(K, RunId)> = listed.to_vec();
    runs.sort();
    runs.dedup_by(|a, b| a.1 == b.1);
    let mut order: Vec<RunId> = runs.into_iter().map(|(_, r)| r).collect();
    if let Some(mine) = mine {
        if !order.contains(mine) {
            order.push(mine.clone());
        }
    }
    let mut order = order.into_iter();
    let deliver = order.next()?;
    Some(Decision {
        cancel: order.filter(|r| *r != deliver).collect(),
        deliver,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(s: &str) -> RunId {
        RunId(s.into())
    }

    #[test]
    fn nothing_seen_and_nothing_made_decides_nothing() {
        assert_eq!(oldest_wins::<u64>(None, &[]), None);
    }

    #[test]
    fn a_lone_run_delivers_whether_listed_or_not() {
        let only = Decision {
            deliver: run("a"),
            cancel: vec![],
        };
        assert_eq!(oldest_wins::<u64>(Some(&run("a")), &[]), Some(only.clone()));
        assert_eq!(
            oldest_wins(Some(&run("a")), &[(5u64, run("a"))]),
            Some(only.clone())
        );
        assert_eq!(oldest_wins(None, &[(5u64, run("a"))]), Some(only));
    }

    #[test]
    fn the_oldest_delivers_and_every_newer_one_is_cancelled() {
        let listed = [(9u64, run("c")), (3, run("b")), (3, run("a"))];
        let d = oldest_wins(Some(&run("c")), &listed);
        assert_eq!(
            d,
            Some(Decision {
                deliver: run("a"),
                cancel: vec![run("b"), run("c")],
            }),
            "creation time first, then run id"
        );
        let mine_oldest = oldest_wins(Some(&run("a")), &[(9u64, run("z")), (1, run("a"))]);
        assert_eq!(
            mine_oldest,
            Some(Decision {
                deliver: run("a"),
                cancel: vec![run("z")],
            })
        );
    }

    #[test]
    fn my_run_missing_from_the_listing_is_the_newest() {
        let d = oldest_wins(Some(&run("mine")), &[(1u64, run("theirs"))]);
        assert_eq!(
            d,
            Some(Decision {
                deliver: run("theirs"),
                cancel: vec![run("mine")],
            })
        );
    }

    #[test]
    fn a_run_listed_twice_counts_once() {
        let d = oldest_wins(None, &[(1u64, run("a")), (1, run("a"))]);
        assert_eq!(
            d,
            Some(Decision {
                deliver: run("a"),
                cancel: vec![],
            })
        );
    }
}
