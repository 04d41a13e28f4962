//! The coalescing ledger (`PgLedger::coalescing`): concurrent launches share one transaction
//! (`tasklatch_start_runs`, migrations/0004) and concurrent status lookups one read — with the
//! answers of the single-call path, in arrival order, under real concurrency.
//!
//! `join_all` on one task polls its futures in order, so with one leader the first call runs
//! alone and every later one is queued, in order, behind it: the rest form one batch. Rows
//! inserted by one transaction share their `xmin`, which shows how many transactions the
//! launches took.

mod support;

use futures::future::join_all;
use support::t;
use tasklatch_core::ids::RunId;
use tasklatch_core::ledger::{LedgerError, MemLedger, RunLedger};
use tasklatch_core::ports::{LaunchOutcome, RunRequest, RunStatus};
use tasklatch_pg::connect_named;
use tasklatch_pg::harness::TestDb;
use tasklatch_pg::{Coalescing, PgLedger};

fn run_req(key: &str, owner: &str, thread: &str) -> RunRequest {
    RunRequest {
        key: key.into(),
        owner: owner.into(),
        thread: thread.into(),
        prompt: format!("prompt for {key}"),
    }
}

/// One batch in flight at a time: what follows a lone first call is one batch.
fn one_leader() -> Coalescing {
    Coalescing {
        max_batch: 256,
        leaders: 1,
    }
}

async fn threads<L: RunLedger>(l: &L, names: &[&str]) {
    for name in names {
        l.create_thread(&"alice".into(), &(*name).into(), t(0))
            .await
            .unwrap();
    }
}

/// How many transactions inserted the runs.
async fn transactions(db: &TestDb) -> i64 {
    sqlx::query_scalar("SELECT count(DISTINCT xmin::text) FROM runs")
        .fetch_one(db.pool())
        .await
        .unwrap()
}

/// A lone launch on thread `warm` (its own batch), then `reqs` concurrently, in order.
async fn warm_then_together(
    l: &PgLedger,
    reqs: &[RunRequest],
) -> Vec<Result<LaunchOutcome, LedgerError>> {
    let warm = run_req("warm", "alice", "warm");
    let mut all = join_all(
        std::iter::once(&warm)
            .chain(reqs)
            .map(|r| l.start_run(r, t(1))),
    )
    .await;
    assert!(
        matches!(all.remove(0), Ok(LaunchOutcome::Started(_))),
        "warm-up started"
    );
    all
}

/// 48 launches racing on spawned tasks, spread over two coalescing ledgers and a single-call
/// one on the same database (as separate processes would be); the outcomes in racer order.
async fn race(
    db: &TestDb,
    request: impl Fn(usize) -> RunRequest,
) -> Vec<Result<LaunchOutcome, LedgerError>> {
    let ledgers = [
        PgLedger::coalescing(db.pool().clone(), Coalescing::default()),
        PgLedger::coalescing(db.pool().clone(), Coalescing::default()),
        PgLedger::new(db.pool().clone()),
    ];
    let racers: Vec<_> = (0..48)
        .map(|i| {
            let l = ledgers[i % 3].clone();
            let req = request(i);
            tokio::spawn(async move { l.start_run(&req, t(2)).await })
        })
        .collect();
    let mut outcomes = Vec::new();
    for h in racers {
        outcomes.push(h.await.unwrap());
    }
    outcomes
}

fn started(o: &Result<LaunchOutcome, LedgerError>) -> bool {
    matches!(o, Ok(LaunchOutcome::Started(_)))
}

#[tokio::test]
async fn coalesced_launches_of_one_key_yield_one_run() {
    let db = TestDb::create().await;
    let l = PgLedger::coalescing(db.pool().clone(), one_leader());
    threads(&l, &["warm", "t1", "t2"]).await;
    // In one batch: twenty launches of one key.
    let same: Vec<_> = (0..20).map(|_| run_req("k1", "alice", "t1")).collect();
    let outcomes = warm_then_together(&l, &same).await;
    assert!(
        outcomes
            .iter()
            .all(|o| o == &Ok(LaunchOutcome::Started(RunId::from("run-2")))),
        "{outcomes:?}"
    );
    assert_eq!(transactions(&db).await, 2, "warm-up, then one batch");
    // Across batches and processes: two coalescing ledgers and a single-call one, racing.
    let outcomes = race(&db, |_| run_req("k2", "alice", "t2")).await;
    assert!(started(&outcomes[0]), "{outcomes:?}");
    assert!(outcomes.iter().all(|o| o == &outcomes[0]), "{outcomes:?}");
    let runs = l.runs().await.unwrap();
    assert_eq!(
        runs.iter().map(|r| r.key.as_str()).collect::<Vec<_>>(),
        ["warm", "k1", "k2"]
    );
    db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn coalesced_launches_on_one_thread_start_exactly_one() {
    let db = TestDb::create().await;
    let l = PgLedger::coalescing(db.pool().clone(), one_leader());
    threads(&l, &["warm", "t1", "t2"]).await;
    // In one batch: the first key on the thread starts, every later one is busy.
    let keys: Vec<_> = (0..16)
        .map(|i| run_req(&format!("k-{i}"), "alice", "t1"))
        .collect();
    let outcomes = warm_then_together(&l, &keys).await;
    assert_eq!(
        outcomes[0],
        Ok(LaunchOutcome::Started(RunId::from("run-2")))
    );
    assert!(
        outcomes[1..].iter().all(|o| o == &Ok(LaunchOutcome::Busy)),
        "{outcomes:?}"
    );
    // Across batches and processes: exactly one of 48 racers starts a run on t2.
    let outcomes = race(&db, |i| run_req(&format!("r-{i}"), "alice", "t2")).await;
    let (mut started_n, mut busy) = (0, 0);
    for o in outcomes {
        match o {
            Ok(LaunchOutcome::Started(_)) => started_n += 1,
            Ok(LaunchOutcome::Busy) => busy += 1,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!((started_n, busy), (1, 47));
    assert_eq!(l.runs().await.unwrap().len(), 3);
    db.cleanup().await;
}

#[tokio::test]
async fn coalesced_launch_on_a_missing_deleted_or_foreign_thread_is_gone() {
    let db = TestDb::create().await;
    let l = PgLedger::coalescing(db.pool().clone(), one_leader());
    threads(&l, &["warm", "t1", "t2", "t3"]).await;
    let known = l
        .start_run(&run_req("known", "alice", "t3"), t(0))
        .await
        .unwrap();
    l.finish_run(&RunId::from("run-1"), RunStatus::Success, t(0))
        .await
        .unwrap();
    assert!(l.delete_thread(&"t1".into(), t(0)).await.unwrap());
    assert!(l.delete_thread(&"t3".into(), t(0)).await.unwrap());
    let outcomes = warm_then_together(
        &l,
        &[
            run_req("a", "alice", "t1"),
            run_req("b", "alice", "nope"),
            run_req("c", "mallory", "t2"),
            run_req("known", "alice", "t3"),
            run_req("d", "alice", "t2"),
        ],
    )
    .await;
    assert_eq!(
        outcomes,
        [
            Ok(LaunchOutcome::ThreadGone),
            Ok(LaunchOutcome::ThreadGone),
            Ok(LaunchOutcome::ThreadGone),
            Ok(known),
            Ok(LaunchOutcome::Started(RunId::from("run-3"))),
        ],
        "a known key answers its run even on a deleted thread; a foreign owner does not \
         make the thread busy for its owner"
    );
    let keys: Vec<_> = l.runs().await.unwrap().into_iter().map(|r| r.key).collect();
    assert_eq!(keys, ["known", "warm", "d"], "nothing created for 404s");
    db.cleanup().await;
}

/// The same requests, made concurrently through the coalescing ledger and one after another
/// through the single-call ledger and the in-memory model: the same answers, the same runs.
#[tokio::test]
async fn coalesced_mixed_batch_answers_as_single_calls_in_order() {
    let reqs = [
        run_req("k1", "alice", "t1"),
        run_req("k1", "alice", "t1"),
        run_req("k2", "alice", "t1"),
        run_req("k3", "alice", "t2"),
        run_req("k4", "alice", "gone"),
        run_req("k5", "mallory", "t4"),
        run_req("k6", "alice", "nope"),
        run_req("k3", "alice", "t2"),
        run_req("k7", "alice", "t4"),
        run_req("k8", "alice", "t2"),
        run_req("k1", "alice", "t1"),
        run_req("k9", "alice", "t3"),
        run_req("k2", "alice", "t1"),
    ];
    async fn setup<L: RunLedger>(l: &L) {
        threads(l, &["warm", "t1", "t2", "t3", "t4", "gone"]).await;
        assert!(l.delete_thread(&"gone".into(), t(0)).await.unwrap());
    }
    let db = TestDb::create().await;
    let coalesced = PgLedger::coalescing(db.pool().clone(), one_leader());
    setup(&coalesced).await;
    let together: Vec<LaunchOutcome> = warm_then_together(&coalesced, &reqs)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(transactions(&db).await, 2, "warm-up, then one batch");

    let reference_db = TestDb::create().await;
    let single = PgLedger::new(reference_db.pool().clone());
    let mem = MemLedger::new();
    setup(&single).await;
    setup(&mem).await;
    let warm = run_req("warm", "alice", "warm");
    single.start_run(&warm, t(1)).await.unwrap();
    mem.start_run(&warm, t(1)).await.unwrap();
    let (mut one_by_one, mut model) = (Vec::new(), Vec::new());
    for r in &reqs {
        one_by_one.push(single.start_run(r, t(1)).await.unwrap());
        model.push(mem.start_run(r, t(1)).await.unwrap());
    }
    assert_eq!(together, one_by_one);
    assert_eq!(together, model);
    let runs = coalesced.runs().await.unwrap();
    assert_eq!(runs, single.runs().await.unwrap());
    assert_eq!(runs, mem.runs().await.unwrap());
    assert_eq!(runs.len(), 5, "warm, k1, k3, k7, k9");
    db.cleanup().await;
    reference_db.cleanup().await;
}

/// A key the runs table would refuse does not ride in a batch (it would fail the batch for
/// everyone): it gets its single-call answer, and its neighbours theirs.
#[tokio::test]
async fn coalesced_unbatchable_key_gets_its_single_call_answer() {
    let long = "k".repeat(1_001);
    let db = TestDb::create().await;
    let l = PgLedger::coalescing(db.pool().clone(), one_leader());
    threads(&l, &["warm", "t1", "t2"]).await;
    let reference_db = TestDb::create().await;
    let single = PgLedger::new(reference_db.pool().clone());
    threads(&single, &["warm", "t1", "t2"]).await;
    let reqs = [
        run_req("ok", "alice", "t1"),
        run_req(&long, "alice", "t2"),
        run_req(&long, "alice", "nope"),
        run_req("", "alice", "nope"),
    ];
    let outcomes = warm_then_together(&l, &reqs).await;
    let mut expected = Vec::new();
    for r in &reqs {
        expected.push(single.start_run(r, t(1)).await);
    }
    // Run ids aside (a refused insert consumes a sequence number, and the unbatchable calls
    // run beside the batches, not in their order).
    let shape = |os: &[Result<LaunchOutcome, LedgerError>]| -> Vec<String> {
        os.iter()
            .map(|o| match o {
                Ok(LaunchOutcome::Started(_)) => "started".to_owned(),
                other => format!("{other:?}"),
            })
            .collect()
    };
    assert_eq!(shape(&outcomes), shape(&expected));
    assert!(started(&outcomes[0]), "{outcomes:?}");
    assert!(outcomes[1].is_err(), "refused by runs_key_len");
    assert_eq!(outcomes[2], Ok(LaunchOutcome::ThreadGone));
    assert_eq!(outcomes[3], Ok(LaunchOutcome::ThreadGone));
    let keys: Vec<_> = l.runs().await.unwrap().into_iter().map(|r| r.key).collect();
    assert_eq!(keys, ["warm", "ok"]);
    db.cleanup().await;
    reference_db.cleanup().await;
}

#[tokio::test]
async fn coalesced_batch_with_a_request_the_database_refuses_answers_every_other_request() {
    let db = TestDb::create().await;
    // An operator's trigger that refuses one key: the batch statement holding it fails as a
    // whole (SQLSTATE P0001), as a single call with it does.
    sqlx::raw_sql(
        "CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN IF NEW.key = 'poison' THEN RAISE EXCEPTION 'poisoned key'; END IF; \
         RETURN NEW; END $$; \
         CREATE TRIGGER refuse_poison BEFORE INSERT ON runs \
         FOR EACH ROW EXECUTE FUNCTION refuse_poison();",
    )
    .execute(db.pool())
    .await
    .unwrap();
    let l = PgLedger::coalescing(db.pool().clone(), one_leader());
    threads(&l, &["warm", "t1", "t2", "t3", "t4", "t5"]).await;
    let reqs = [
        run_req("k1", "alice", "t1"),
        run_req("k2", "alice", "t2"),
        run_req("poison", "alice", "t3"),
        run_req("k4", "alice", "t4"),
        run_req("k5", "alice", "t5"),
    ];
    let outcomes = warm_then_together(&l, &reqs).await;
    for (i, o) in outcomes.iter().enumerate() {
        assert_eq!(started(o), i != 2, "request {i}: {o:?}");
    }
    assert!(outcomes[2].is_err(), "{outcomes:?}");
    let mut keys: Vec<_> = l.runs().await.unwrap().into_iter().map(|r| r.key).collect();
    keys.sort();
    assert_eq!(keys, ["k1", "k2", "k4", "k5", "warm"]);
    db.cleanup().await;
}

#[tokio::test]
async fn coalesced_run_status_lookups_answer_each_run_and_missing_for_unknown() {
    let db = TestDb::create().await;
    let l = PgLedger::coalescing(db.pool().clone(), one_leader());
    let names: Vec<String> = (0..6).map(|i| format!("t{i}")).collect();
    threads(&l, &names.iter().map(String::as_str).collect::<Vec<_>>()).await;
    for (i, name) in names.iter().enumerate() {
        l.start_run(&run_req(&format!("k{i}"), "alice", name), t(1))
            .await
            .unwrap();
    }
    let ends = [
        RunStatus::Success,
        RunStatus::Error,
        RunStatus::Timeout,
        RunStatus::Interrupted,
    ];
    for (i, status) in ends.iter().enumerate() {
        assert!(l
            .finish_run(&RunId(format!("run-{}", i + 1)), *status, t(2))
            .await
            .unwrap());
    }
    let lookups: Vec<RunId> = [
        "run-3", "run-1", "run-99", "run-5", "run-2", "run-4", "run-6", "run-1", "run-\0",
    ]
    .iter()
    .map(|r| RunId::from(*r))
    .collect();
    let together = join_all(lookups.iter().map(|r| l.run_status(r))).await;
    let single = PgLedger::new(db.pool().clone());
    let mut one_by_one = Vec::new();
    for r in &lookups {
        one_by_one.push(single.run_status(r).await);
    }
    assert_eq!(together, one_by_one);
    assert_eq!(
        together,
        [
            Ok(RunStatus::Timeout),
            Ok(RunStatus::Success),
            Ok(RunStatus::Missing),
            Ok(RunStatus::Running),
            Ok(RunStatus::Error),
            Ok(RunStatus::Interrupted),
            Ok(RunStatus::Running),
            Ok(RunStatus::Success),
            Ok(RunStatus::Missing),
        ]
    );
    db.cleanup().await;
}

/// Two processes launching on the same threads in opposite orders, many times: batches lock
/// their threads in one global order, so neither ever waits for the other in a cycle (a
/// deadlock would fail a batch with SQLSTATE 40P01).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_coalesced_batches_on_shared_threads_do_not_deadlock() {
    let db = TestDb::create().await;
    let names: Vec<String> = (0..40).map(|i| format!("t{i:02}")).collect();
    let a = PgLedger::coalescing(db.pool().clone(), one_leader());
    let b = PgLedger::coalescing(db.pool().clone(), one_leader());
    threads(&a, &names.iter().map(String::as_str).collect::<Vec<_>>()).await;
    for round in 0..15i64 {
        let launch = |l: PgLedger, side: &'static str, reversed: bool| {
            let mut order = names.clone();
            if reversed {
                order.reverse();
            }
            tokio::spawn(async move {
                let reqs: Vec<RunRequest> = order
                    .iter()
                    .map(|th| run_req(&format!("{side}-{round}-{th}"), "alice", th))
                    .collect();
                join_all(reqs.iter().map(|r| l.start_run(r, t(round)))).await
            })
        };
        let (ra, rb) = (launch(a.clone(), "a", false), launch(b.clone(), "b", true));
        let (ra, rb) = (ra.await.unwrap(), rb.await.unwrap());
        let all: Vec<_> = ra.into_iter().chain(rb).collect();
        assert!(all.iter().all(Result::is_ok), "round {round}: {all:?}");
        let started_n = all.iter().filter(|o| started(o)).count();
        assert_eq!(started_n, names.len(), "one run per thread per round");
        let active = a.active_runs(1_000).await.unwrap();
        let ends: Vec<_> = active
            .into_iter()
            .map(|(run, _)| (run, RunStatus::Success))
            .collect();
        a.finish_runs(&ends, t(round)).await.unwrap();
    }
    db.cleanup().await;
}

/// A batch whose connection dies before it commits: every request in it gets an error,
/// nothing of it happened, and retrying the same keys starts each run once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_killed_mid_transaction_fails_every_request_and_leaves_nothing() {
    let db = TestDb::create().await;
    let pool = connect_named(db.url(), 4, "coalesce-kill-test")
        .await
        .unwrap();
    let l = PgLedger::coalescing(pool, one_leader());
    threads(&l, &["warm", "t1", "t2", "t3"]).await;
    // Another session holds t2: the batch will wait for it, holding t1 already.
    let mut blocker = db.pool().begin().await.unwrap();
    sqlx::query("SELECT 1 FROM threads WHERE thread = 't2' FOR UPDATE")
        .execute(&mut *blocker)
        .await
        .unwrap();
    let reqs = [
        run_req("k1", "alice", "t1"),
        run_req("k2", "alice", "t2"),
        run_req("k3", "alice", "t3"),
    ];
    let batch = {
        let (l, reqs) = (l.clone(), reqs.clone());
        tokio::spawn(async move { warm_then_together(&l, &reqs).await })
    };
    let waiting = loop {
        let pid: Option<i32> = sqlx::query_scalar(
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'coalesce-kill-test' \
             AND wait_event_type = 'Lock'",
        )
        .fetch_optional(db.pool())
        .await
        .unwrap();
        if let Some(pid) = pid {
            break pid;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    };
    sqlx::query("SELECT pg_terminate_backend($1)")
        .bind(waiting)
        .execute(db.pool())
        .await
        .unwrap();
    let outcomes = batch.await.unwrap();
    assert!(outcomes.iter().all(Result::is_err), "{outcomes:?}");
    blocker.rollback().await.unwrap();
    let keys: Vec<_> = l.runs().await.unwrap().into_iter().map(|r| r.key).collect();
    assert_eq!(keys, ["warm"], "nothing of the killed batch happened");
    let retried = join_all(reqs.iter().map(|r| l.start_run(r, t(2)))).await;
    assert!(retried.iter().all(started), "{retried:?}");
    let again = join_all(reqs.iter().map(|r| l.start_run(r, t(3)))).await;
    assert_eq!(retried, again, "the same keys, the same runs");
    assert_eq!(l.runs().await.unwrap().len(), 4);
    db.cleanup().await;
}
