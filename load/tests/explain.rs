//! Every claim is served by its partial index at one million rows: `EXPLAIN` of each claim's
//! candidate query (custom and generic plans) and of each whole claim statement shows an index
//! scan and no sequential scan on `tasks`. Runs in `cargo test` (about half a minute).

use std::time::{Duration, Instant};
use tasklatch_core::lease::LeaseKind;
use tasklatch_core::policy::Policy;
use tasklatch_core::store::{ClaimRequest, Store};
use tasklatch_core::time::Timestamp;
use tasklatch_load::bulk::{insert_rows, Mix};
use tasklatch_pg::harness::TestDb;
use tasklatch_pg::{claim_candidate_queries, PgStore};

const ROWS: u64 = 1_000_000;

/// The plan of `sql` (`$1` now, `$2` limit) as a prepared statement executed with `now` and 64,
/// under the session's `plan_cache_mode`.
async fn plan(conn: &mut sqlx::PgConnection, name: &str, sql: &str, now: i64) -> String {
    let run = |q: String| sqlx::raw_sql(sqlx::AssertSqlSafe(q));
    run(format!("PREPARE {name} (bigint, bigint) AS {sql}"))
        .execute(&mut *conn)
        .await
        .unwrap_or_else(|e| panic!("PREPARE {sql}: {e}"));
    let rows: Vec<(String,)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "EXPLAIN EXECUTE {name}({now}, 64)"
    )))
    .fetch_all(&mut *conn)
    .await
    .unwrap_or_else(|e| panic!("EXPLAIN {sql}: {e}"));
    rows.into_iter()
        .map(|(l,)| l)
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_claim_uses_its_index_at_one_million_rows() {
    let started = Instant::now();
    let db = TestDb::create().await;
    let now = Timestamp::from_micros(1_700_000_000_000_000);
    insert_rows(db.pool(), ROWS, now, Mix::default())
        .await
        .unwrap();
    eprintln!("{ROWS} rows in {:?}", started.elapsed());
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(db.url())
        .await
        .unwrap();
    let due = now.plus(Duration::from_secs(1800)).as_micros();
    for mode in ["force_custom_plan", "force_generic_plan"] {
        sqlx::query(sqlx::AssertSqlSafe(format!("SET plan_cache_mode = {mode}")))
            .execute(&mut conn)
            .await
            .unwrap();
        for (kind, sql) in claim_candidate_queries() {
            let p = plan(
                &mut conn,
                &format!("claim_{kind}_{mode}"),
                &format!("{sql} FOR UPDATE SKIP LOCKED"),
                due,
            )
            .await;
            eprintln!("-- {kind} ({mode}):\n{p}");
            assert!(
                p.contains(&format!("tasks_{kind}_due")),
                "{kind}: no index\n{p}"
            );
            assert!(
                !p.contains("Seq Scan on tasks"),
                "{kind}: sequential scan\n{p}"
            );
        }
    }
    drop(conn);
    // The whole claim statements, executed: each returns its batch, fast.
    let store = PgStore::new(db.pool().clone(), Policy::default());
    for kind in LeaseKind::ALL {
        let t0 = Instant::now();
        let claimed = store
            .claim(
                kind,
                ClaimRequest {
                    worker: "explain".into(),
                    now: Timestamp::from_micros(due),
                    lease_for: Duration::from_secs(60),
                    limit: 64,
                },
            )
            .await
            .unwrap();
        eprintln!(
            "claim {kind:?}: {} rows in {:?}",
            claimed.len(),
            t0.elapsed()
        );
        assert_eq!(claimed.len(), 64, "{kind:?}");
    }
    db.cleanup().await;
    eprintln!("total {:?}", started.elapsed());
}
