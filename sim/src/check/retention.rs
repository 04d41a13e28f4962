//! Retention keeps what an operator still needs (DOMAIN §10): a dead letter stays until it is
//! requeued or has aged by the dead-letter age, counted from when it became one — never from
//! the task's last remote change. Read from what the store answered: an operator's requeue
//! that found no task at all while the task was still a dead letter (no later write showed
//! another status), within [`SEEN_WITHIN`] of the write that made it one, means retention
//! deleted a fresh dead letter.

use super::facts::Facts;
use super::{Invariant, Verdict};
use crate::history::Seen;
use crate::plan::timing::{DEAD_LETTERS_AFTER, MAX_BIG_SKEW};
use std::collections::BTreeMap;
use std::time::Duration;
use tasklatch_core::status::NotifyStatus;
use tasklatch_core::store::RequeueOutcome;

/// A dead letter is certainly still kept this long after it became one: the dead-letter age
/// less the largest clock skew twice (the dead-lettering worker's stamp and the retaining
/// worker's clock) and a retention pass.
const SEEN_WITHIN: Duration = DEAD_LETTERS_AFTER
    .saturating_sub(MAX_BIG_SKEW)
    .saturating_sub(MAX_BIG_SKEW)
    .saturating_sub(Duration::from_secs(10));

pub(super) fn check(f: &Facts<'_>, v: &mut Verdict) {
    let mut dead_lettered_us: BTreeMap<&str, u64> = BTreeMap::new();
    for (i, e) in f.entries.iter().enumerate() {
        match &e.event {
            Seen::StoreWrite { rows, .. } => {
                for r in rows {
                    match r.outcome {
                        Ok((_, _, NotifyStatus::DeadLetter)) => {
                            dead_lettered_us
                                .entry(r.task_id.as_str())
                                .or_insert(e.at_us);
                        }
                        Ok(_) => {
                            dead_lettered_us.remove(r.task_id.as_str());
                        }
                        Err(_) => {}
                    }
                }
            }
            Seen::StoreRequeue {
                task_id,
                outcome: RequeueOutcome::Requeued(_),
                ..
            } => {
                dead_lettered_us.remove(task_id.as_str());
            }
            Seen::StoreRequeue {
                task_id,
                outcome: RequeueOutcome::NotFound,
                ..
            } => {
                let Some(at_us) = dead_lettered_us.get(task_id.as_str()) else {
                    continue;
                };
                let age = Duration::from_micros(e.at_us.saturating_sub(*at_us));
                if age < SEEN_WITHIN {
                    v.push(
                        Invariant::Lost,
                        e.task.clone(),
                        Some(i),
                        format!(
                            "a dead letter {} s old was deleted before the operator could requeue it",
                            age.as_secs()
                        ),
                    );
                }
            }
            _ => {}
        }
    }
}
