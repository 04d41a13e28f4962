//! The planted bugs that live in SQL (`Mutant::lives_in_sql`): with the `mutations` feature,
//! `PgStore::with_mutant(…, Some(m))` and `PgLedger::with_mutant(…, Some(m))` run the SQL variant, which
//! behaves exactly like `MemStore`/`MemLedger` with the same mutant switched on — and differs
//! from the correct store. Run with `cargo test -p tasklatch-pg --features mutations`.
#![cfg(feature = "mutations")]

mod support;

use support::*;
use tasklatch_core::lease::{LeaseKind, Refusal};
use tasklatch_core::ledger::{MemLedger, RunLedger};
use tasklatch_core::mem_store::MemStore;
use tasklatch_core::mutation::{self, Mutant};
use tasklatch_core::ports::{LaunchOutcome, RunRequest};
use tasklatch_core::status::RemoteStatus;
use tasklatch_core::store::*;
use tasklatch_pg::harness::TestDb;
use tasklatch_pg::{PgLedger, PgStore};

/// The outcome of one scenario per planted bug: a write that the correct store refuses.
async fn scenario<S: Store>(s: &S, m: Mutant) -> Vec<WriteOutcome> {
    s.insert_task(submitted("a", t(0))).await.unwrap();
    let c1 = claim(s, LeaseKind::Poll, "w", t(0), 10).await.remove(0);
    let write = |lease, at| PollWrite {
        task_id: "a".into(),
        lease,
        completed_at: t(at),
        update: report(&c1.row, RemoteStatus::Working, t(at)),
    };
    match m {
        Mutant::LeaseTokenNotChecked => {
            // Same worker claims again after expiry; the first claim's token is stale.
            let _c2 = claim(s, LeaseKind::Poll, "w", t(60), 10).await;
            s.apply_polls(vec![write(c1.lease.clone(), 61)], t(61))
                .await
                .unwrap()
        }
        Mutant::LeaseExpiryNotChecked => s
            .apply_polls(vec![write(c1.lease.clone(), 61)], t(61))
            .await
            .unwrap(),
        Mutant::PollAppliedAfterCancel => {
            s.request_cancel(&alice(), &CancelTarget::Id("a".into()), t(5))
                .await
                .unwrap();
            s.apply_polls(vec![write(c1.lease.clone(), 4)], t(6))
                .await
                .unwrap()
        }
        other => panic!("{other} does not live in SQL"),
    }
}

#[tokio::test]
async fn sql_mutants_match_the_model_and_break_the_guard() {
    for m in [
        Mutant::LeaseTokenNotChecked,
        Mutant::LeaseExpiryNotChecked,
        Mutant::PollAppliedAfterCancel,
    ] {
        let db = TestDb::create().await;
        let pg = PgStore::with_mutant(db.pool().clone(), policy(), Some(m));
        assert_eq!(pg.mutant(), Some(m));
        let mutated_pg = scenario(&pg, m).await;
        let mutated_mem = {
            let _on = mutation::activate(Some(m));
            scenario(&MemStore::new(policy()), m).await
        };
        assert_eq!(normalised(&mutated_pg), normalised(&mutated_mem), "{m}");
        assert!(
            mutated_pg[0].is_ok(),
            "{m}: the planted bug lets the write through"
        );
        let correct = scenario(&MemStore::new(policy()), m).await;
        assert!(
            matches!(
                correct[0],
                Err(Refusal::LeaseNotHeld | Refusal::LeaseExpired | Refusal::CancelRequested)
            ),
            "{m}: {correct:?}"
        );
        db.cleanup().await;
    }
}

#[tokio::test]
async fn other_mutants_are_ignored_by_the_store() {
    let db = TestDb::create().await;
    let pg = PgStore::with_mutant(
        db.pool().clone(),
        policy(),
        Some(Mutant::FingerprintCheckSkipped),
    );
    assert_eq!(pg.mutant(), None);
    db.cleanup().await;
}

#[tokio::test]
async fn ledger_uniqueness_dropped_creates_a_second_run_for_a_known_key() {
    let req = RunRequest {
        key: "k1".into(),
        owner: "alice".into(),
        thread: "t1".into(),
        prompt: "p".into(),
    };
    let db = TestDb::create().await;
    let pg = PgLedger::with_mutant(db.pool().clone(), Some(Mutant::LedgerUniquenessDropped))
        .await
        .unwrap();
    let mem = MemLedger::new();
    let _on = mutation::activate(Some(Mutant::LedgerUniquenessDropped));
    pg.create_thread(&"alice".into(), &"t1".into(), t(0))
        .await
        .unwrap();
    mem.create_thread(&"alice".into(), &"t1".into(), t(0))
        .await
        .unwrap();
    let first = pg.start_run(&req, t(1)).await.unwrap();
    assert_eq!(first, mem.start_run(&req, t(1)).await.unwrap());
    pg.finish_run(
        &"run-1".into(),
        tasklatch_core::ports::RunStatus::Error,
        t(2),
    )
    .await
    .unwrap();
    mem.finish_run(
        &"run-1".into(),
        tasklatch_core::ports::RunStatus::Error,
        t(2),
    )
    .await
    .unwrap();
    let second = pg.start_run(&req, t(3)).await.unwrap();
    assert_eq!(second, mem.start_run(&req, t(3)).await.unwrap());
    assert_eq!(second, LaunchOutcome::Started("run-2".into()));
    assert_eq!(pg.runs().await.unwrap().len(), 2, "the same key, two runs");
    db.cleanup().await;
}
