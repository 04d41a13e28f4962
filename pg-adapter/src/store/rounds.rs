//! Guarded batch writes as rounds: a batch may name a task more than once, and each occurrence
//! must see the effect of the one before, so the k-th occurrences of every task run as round k
//! — one statement per round, all rounds in one transaction.

use super::decode::{col, outcome};
use super::{PgQuery, PgStore};
use crate::error::store_error;
use sqlx::postgres::PgRow;
use std::collections::HashMap;
use tasklatch_core::ids::TaskId;
use tasklatch_core::lease::LeaseKind;
use tasklatch_core::store::{Claimed, StoreError, WriteOutcome};

/// The k-th occurrence of each task id goes to round k; rounds keep batch order.
pub(super) fn rounds<'a>(ids: impl Iterator<Item = &'a TaskId>) -> Vec<Vec<usize>> {
    let mut seen: HashMap<&TaskId, usize> = HashMap::new();
    let mut plan: Vec<Vec<usize>> = Vec::new();
    for (pos, id) in ids.enumerate() {
        let k = seen.entry(id).or_insert(0);
        if plan.len() <= *k {
            plan.push(Vec::new());
        }
        plan[*k].push(pos);
        *k += 1;
    }
    plan
}

impl PgStore {
    /// Runs a guarded batch write. Rows of the batch are independent; a task named twice is
    /// handled in order (the second occurrence sees the first one's effect), by running the
    /// k-th occurrences of every task as round k, all in one transaction.
    pub(super) async fn write_rounds<F>(
        &self,
        n: usize,
        plan: Vec<Vec<usize>>,
        build: F,
    ) -> Result<Vec<WriteOutcome>, StoreError>
    where
        F: Fn(&[usize]) -> PgQuery + Send + Sync,
    {
        let (outcomes, _) = self.write_rounds_claiming(n, plan, build, false).await?;
        Ok(outcomes)
    }

    /// [`PgStore::write_rounds`]; with `hand_off`, also the rows whose outcome says the write
    /// claimed their notification (`handed_off`, the whole row returned), in batch order.
    pub(super) async fn write_rounds_claiming<F>(
        &self,
        n: usize,
        plan: Vec<Vec<usize>>,
        build: F,
        hand_off: bool,
    ) -> Result<(Vec<WriteOutcome>, Vec<Claimed>), StoreError>
    where
        F: Fn(&[usize]) -> PgQuery + Send + Sync,
    {
        let mut out: Vec<Option<WriteOutcome>> = vec![None; n];
        let mut claimed: Vec<(usize, Claimed)> = Vec::new();
        let mut take = |rows: &[PgRow], round: &[usize]| -> Result<(), StoreError> {
            place(rows, round, &mut out)?;
            if hand_off {
                for (row, &pos) in rows.iter().zip(round) {
                    if col::<Option<bool>>(row, "handed_off")? == Some(true) {
                        claimed.push((pos, self.claimed(row, LeaseKind::Notify)?));
                    }
                }
            }
            Ok(())
        };
        match plan.as_slice() {
            [] => {}
            [only] => {
                let rows = build(only)
                    .fetch_all(&self.inner.pool)
                    .await
                    .map_err(store_error)?;
                take(&rows, only)?;
            }
            rounds => {
                let mut tx = self.inner.pool.begin().await.map_err(store_error)?;
                for round in rounds {
                    let rows = build(round)
                        .fetch_all(&mut *tx)
                        .await
                        .map_err(store_error)?;
                    take(&rows, round)?;
                }
                tx.commit().await.map_err(store_error)?;
            }
        }
        let outcomes = out
            .into_iter()
            .map(|o| o.ok_or_else(|| StoreError::Unavailable("a write got no outcome".into())))
            .collect::<Result<Vec<_>, _>>()?;
        claimed.sort_by_key(|(pos, _)| *pos);
        Ok((outcomes, claimed.into_iter().map(|(_, c)| c).collect()))
    }
}

/// Puts a round's outcome rows (ordered by ordinality, 1-based) at their batch positions.
fn place(
    rows: &[PgRow],
    round: &[usize],
    out: &mut [Option<WriteOutcome>],
) -> Result<(), StoreError> {
    if rows.len() != round.len() {
        return Err(StoreError::Unavailable(
            "a batch write returned the wrong number of outcomes".into(),
        ));
    }
    for (row, &pos) in rows.iter().zip(round) {
        out[pos] = Some(outcome(row)?);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_split_repeated_ids_in_order() {
        let ids: Vec<TaskId> = ["a", "b", "a", "c", "a", "b"]
            .iter()
            .map(|s| TaskId::from(*s))
            .collect();
        assert_eq!(rounds(ids.iter()), vec![vec![0, 1, 3], vec![2, 5], vec![4]]);
        assert!(rounds(std::iter::empty()).is_empty());
    }
}
