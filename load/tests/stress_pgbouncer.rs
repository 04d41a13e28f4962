//! The stress run with chaos behind Debian's PgBouncer 1.18 in session pooling (issue 27 item 5),
//! on a throwaway cluster: the engines', the ledger's, the submitter's and the runtime's pools go
//! through the pooler (the worker's session as database settings, `options` ignored, as the
//! README says to run it); the run's admin pool (migrate, chaos, the verdict) connects directly,
//! so chaos's `pg_terminate_backend` kills the real server backends behind the pooler, one at a
//! time and all at once. Nothing lost, duplicated or unexpected, judged from the doubles'
//! records; the run's duration is printed.
//!
//! PgBouncer must be installed (`scripts/install-deb-tools`, run on demand by the harness): a
//! missing binary fails the test.

use std::time::Instant;
use tasklatch_load::stress::{run, StressConfig};
use tasklatch_pg::harness::pgbouncer::{Pgbouncer, PoolMode};
use tasklatch_pg::harness::{with_database, LocalCluster, TestDb};

/// The worker's default session, on the database: what every pooled connection must get.
const SESSION: [&str; 3] = [
    "search_path = tasklatch",
    "statement_timeout = '30s'",
    "lock_timeout = '5s'",
];

async fn database_with_session(cluster: &LocalCluster) -> TestDb {
    let db = TestDb::create_on(cluster.server())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    for setting in SESSION {
        let sql = format!("ALTER DATABASE \"{}\" SET {setting}", db.name());
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
            .execute(db.pool())
            .await
            .unwrap_or_else(|e| panic!("{setting}: {e}"));
    }
    db
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stress_with_chaos_through_session_pooling_loses_and_duplicates_nothing() {
    let cluster = LocalCluster::start().unwrap_or_else(|e| {
        panic!("cannot start a throwaway cluster (PostgreSQL server binaries needed): {e}")
    });
    let db = database_with_session(&cluster).await;
    let bouncer = Pgbouncer::start(
        cluster.port(),
        PoolMode::Session,
        "extra_float_digits,options",
    )
    .unwrap_or_else(|e| panic!("cannot start pgbouncer: {e}"));
    let mut config = StressConfig::new(4, 300);
    config.chaos = true;
    config.seed = 27;
    config.database_url = Some(bouncer.url(db.name()));
    config.admin_url = Some(with_database(&cluster.url(), db.name()));
    let started = Instant::now();
    let report = run(config, |p| eprintln!("{}", p.line()))
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", bouncer.log()));
    let took = started.elapsed();
    eprintln!(
        "through pgbouncer (session pooling): {} kills={} restarts={} aborts={} in {:.1} s",
        report.line(),
        report.kills,
        report.restarts,
        report.aborts,
        took.as_secs_f64()
    );
    assert!(report.settled, "everything settled: {report:#?}");
    assert!(
        report.passed(),
        "{}\n{:#?}",
        report.line(),
        report.verdict.examples
    );
    assert!(
        report.verdict.delivered >= 300 - report.verdict.exempt,
        "{report:#?}"
    );
    assert!(
        report.kills > 0 && report.restarts > 0,
        "server backends behind the pooler were killed, one and all at once: {report:#?}"
    );
    let log = bouncer.log();
    let logins = log.matches("login attempt: db=").count();
    assert!(
        logins >= 30,
        "the pools connected through the pooler ({logins} logins):\n{log}"
    );
    db.cleanup().await;
}
