//! The conformance suite ([`tasklatch_core::conformance`]) run against the Postgres
//! implementation: every store body for `PgStore`, every ledger body for `PgLedger` per call
//! and coalescing, each test in a fresh database that is dropped afterwards. (Core runs the same
//! bodies against `MemStore`/`MemLedger`.) Below: the Postgres-only tests.

use tasklatch_core::conformance::support::*;
use tasklatch_core::conformance::Harness;
use tasklatch_core::ids::RunId;
use tasklatch_core::lease::LeaseKind;
use tasklatch_core::ledger::{MemLedger, RunLedger};
use tasklatch_core::ports::{LaunchOutcome, RunStatus};
use tasklatch_core::status::{NotifyStatus, RemoteStatus};
use tasklatch_core::store::*;
use tasklatch_core::transitions::outbox::NotifyAction;
use tasklatch_pg::harness::TestDb;
use tasklatch_pg::{Coalescing, PgLedger, PgStore};

/// A fresh database with a `PgStore` on it.
struct Pg {
    db: TestDb,
    store: PgStore,
}

impl Harness for Pg {
    type Subject = PgStore;

    async fn setup() -> Self {
        let db = TestDb::create().await;
        let store = PgStore::new(db.pool().clone(), policy());
        Pg { db, store }
    }

    fn subject(&self) -> &PgStore {
        &self.store
    }

    async fn cleanup(self) {
        self.db.cleanup().await;
    }
}

/// A fresh database with a `PgLedger` on it: one statement per call, or coalescing.
struct PgRuns<const COALESCING: bool> {
    db: TestDb,
    ledger: PgLedger,
}

impl<const COALESCING: bool> Harness for PgRuns<COALESCING> {
    type Subject = PgLedger;

    async fn setup() -> Self {
        let db = TestDb::create().await;
        let ledger = if COALESCING {
            PgLedger::coalescing(db.pool().clone(), Coalescing::default())
        } else {
            PgLedger::new(db.pool().clone())
        };
        PgRuns { db, ledger }
    }

    fn subject(&self) -> &PgLedger {
        &self.ledger
    }

    async fn cleanup(self) {
        self.db.cleanup().await;
    }
}

mod pg {
    tasklatch_core::store_conformance!(super::Pg);
}

mod pg_ledger {
    tasklatch_core::ledger_conformance!(super::PgRuns<false>);
}

mod pg_coalescing_ledger {
    tasklatch_core::ledger_conformance!(super::PgRuns<true>);
}

// ---------------------------------------------------------------------------------------------
// Postgres only: real concurrency on the ledger and the store

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pg_ledger_is_race_safe_across_connections() {
    let db = TestDb::create().await;
    let l = PgLedger::new(db.pool().clone());
    l.create_thread(&"alice".into(), &"t1".into(), t(0))
        .await
        .unwrap();
    // Sixteen starters of one key: one run.
    let same: Vec<_> = (0..16)
        .map(|_| {
            let l = l.clone();
            tokio::spawn(async move { l.start_run(&run_req("k1", "alice", "t1"), t(1)).await })
        })
        .collect();
    let mut outcomes = Vec::new();
    for h in same {
        outcomes.push(h.await.unwrap().unwrap());
    }
    assert!(outcomes.iter().all(|o| o == &outcomes[0]), "{outcomes:?}");
    assert!(matches!(outcomes[0], LaunchOutcome::Started(_)));
    l.finish_run(&RunId::from("run-1"), RunStatus::Success, t(2))
        .await
        .unwrap();
    // Sixteen starters of different keys on one thread: exactly one run, the rest 409.
    let many: Vec<_> = (0..16)
        .map(|i| {
            let l = l.clone();
            tokio::spawn(async move {
                l.start_run(&run_req(&format!("k-{i}"), "alice", "t1"), t(3))
                    .await
            })
        })
        .collect();
    let mut started = 0;
    let mut busy = 0;
    for h in many {
        match h.await.unwrap().unwrap() {
            LaunchOutcome::Started(_) => started += 1,
            LaunchOutcome::Busy => busy += 1,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!((started, busy), (1, 15));
    assert_eq!(l.runs().await.unwrap().len(), 2);
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pg_concurrent_claims_never_share_a_row() {
    let db = TestDb::create().await;
    let s = PgStore::new(db.pool().clone(), policy());
    for i in 0..200 {
        s.insert_task(submitted(&format!("task-{i:03}"), t(0)))
            .await
            .unwrap();
    }
    let claimers: Vec<_> = (0..8)
        .map(|w| {
            let s = s.clone();
            tokio::spawn(async move {
                let mut got = Vec::new();
                loop {
                    let c = s
                        .claim(LeaseKind::Poll, req(&format!("w{w}"), t(1), 7))
                        .await
                        .unwrap();
                    if c.is_empty() {
                        return got;
                    }
                    got.extend(ids(&c));
                }
            })
        })
        .collect();
    let mut all = Vec::new();
    for h in claimers {
        all.extend(h.await.unwrap());
    }
    all.sort();
    let before = all.len();
    all.dedup();
    assert_eq!(before, all.len(), "a row was claimed twice");
    assert_eq!(all.len(), 200);
    db.cleanup().await;
}

/// A poll write and a notification write on the same row, racing: neither clobbers the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pg_poll_and_notify_writes_do_not_clobber_each_other() {
    let db = TestDb::create().await;
    let s = PgStore::new(db.pool().clone(), policy());
    for i in 0..50 {
        s.insert_task(submitted(&format!("t{i:02}"), t(0)))
            .await
            .unwrap();
    }
    // Version 1 (input_required) everywhere, then a notify claim and a poll claim of each row.
    let polled = claim(&s, LeaseKind::Poll, "w", t(0), 100).await;
    let writes: Vec<PollWrite> = polled
        .iter()
        .map(|c| PollWrite {
            task_id: c.row.id().clone(),
            lease: c.lease.clone(),
            completed_at: t(0),
            update: report(&c.row, RemoteStatus::InputRequired, t(0)),
        })
        .collect();
    s.apply_polls(writes, t(0)).await.unwrap();
    let notified = claim(&s, LeaseKind::Notify, "n", t(1), 100).await;
    let polled = claim(&s, LeaseKind::Poll, "w", t(60), 100).await;
    assert_eq!((notified.len(), polled.len()), (50, 50));
    let s1 = s.clone();
    let poll_task = tokio::spawn(async move {
        let writes: Vec<PollWrite> = polled
            .iter()
            .map(|c| PollWrite {
                task_id: c.row.id().clone(),
                lease: c.lease.clone(),
                completed_at: t(60),
                update: report(&c.row, RemoteStatus::Completed, t(60)),
            })
            .collect();
        s1.apply_polls(writes, t(60)).await.unwrap()
    });
    let s2 = s.clone();
    let notify_task = tokio::spawn(async move {
        let writes: Vec<NotifyWrite> = notified
            .iter()
            .rev()
            .map(|c| NotifyWrite {
                task_id: c.row.id().clone(),
                lease: c.lease.clone(),
                dispatch_version: 1,
                action: NotifyAction::Launched(RunId(format!("run-{}", c.row.id()))),
            })
            .collect();
        s2.finish_notifications(writes, t(59)).await.unwrap()
    });
    let (p, n) = (poll_task.await.unwrap(), notify_task.await.unwrap());
    assert!(p.iter().all(|o| o.is_ok()) && n.iter().all(|o| o.is_ok()));
    for r in s.admin_rows(None, 100).await.unwrap() {
        assert_eq!(r.remote.status, RemoteStatus::Completed);
        assert_eq!(r.outbox.event_version, 2);
        assert_eq!(r.outbox.dispatch_version, 1);
        assert_eq!(r.outbox.status, NotifyStatus::Dispatched);
        assert_eq!(r.outbox.run_id, Some(RunId(format!("run-{}", r.id()))));
    }
    db.cleanup().await;
}

#[tokio::test]
async fn mem_ledger_and_pg_ledger_agree_on_a_sequential_history() {
    let db = TestDb::create().await;
    let pg = PgLedger::new(db.pool().clone());
    let mem = MemLedger::new();
    for (i, (key, thread)) in [
        ("a", "t1"),
        ("b", "t1"),
        ("a", "t1"),
        ("c", "t2"),
        ("d", "t3"),
    ]
    .iter()
    .enumerate()
    {
        if i == 0 {
            for th in ["t1", "t2"] {
                pg.create_thread(&"alice".into(), &(*th).into(), t(0))
                    .await
                    .unwrap();
                mem.create_thread(&"alice".into(), &(*th).into(), t(0))
                    .await
                    .unwrap();
            }
        }
        let r = run_req(key, "alice", thread);
        assert_eq!(
            pg.start_run(&r, t(i as i64)).await.unwrap(),
            mem.start_run(&r, t(i as i64)).await.unwrap()
        );
    }
    assert_eq!(pg.runs().await.unwrap(), mem.runs().await.unwrap());
    db.cleanup().await;
}
