//! Coverage of retention meeting a fresh dead letter (DOMAIN §10), read from a finished history:
//! in a run where retention passes run, an operator's requeue found a dead letter that had
//! been one for longer than the ordinary retention age of a finished row plus a pass — so at
//! least one pass met it while only the dead-letter age kept it.

use crate::history::{Entry, Seen};
use crate::plan::timing::{RETENTION_AFTER, RETENTION_EVERY};
use std::collections::BTreeMap;
use tasklatch_core::status::NotifyStatus;
use tasklatch_core::store::RequeueOutcome;

/// Whether `entries` (a whole history, its plan first) show retention meeting a fresh dead
/// letter.
pub fn retention_met_fresh_dead_letter(entries: &[Entry]) -> bool {
    let retention = entries.iter().any(|e| match &e.event {
        Seen::Plan { plan } => plan.retention,
        _ => false,
    });
    let past_us = (RETENTION_AFTER + RETENTION_EVERY).as_micros() as u64;
    let mut dead_since: BTreeMap<&str, u64> = BTreeMap::new();
    retention
        && entries.iter().any(|e| match &e.event {
            Seen::StoreWrite { rows, .. } => {
                for r in rows {
                    match r.outcome {
                        Ok((_, _, NotifyStatus::DeadLetter)) => {
                            dead_since.entry(r.task_id.as_str()).or_insert(e.at_us);
                        }
                        Ok(_) => {
                            dead_since.remove(r.task_id.as_str());
                        }
                        Err(_) => {}
                    }
                }
                false
            }
            Seen::StoreRequeue {
                task_id,
                outcome: RequeueOutcome::Requeued(_),
                ..
            } => dead_since
                .remove(task_id.as_str())
                .is_some_and(|since| e.at_us.saturating_sub(since) > past_us),
            _ => false,
        })
}
