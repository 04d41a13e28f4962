//! The worker behind Debian's PgBouncer 1.18 (issue 27 item 5), on a throwaway cluster:
//!
//! - transaction pooling with `ignore_startup_parameters = extra_float_digits,options` (the
//!   usual advice) drops the worker's start-up options: its pool refuses every connection,
//!   naming `search_path` and the pooler, so the host application's `public.tasks` is never
//!   read or written;
//! - without `options` in `ignore_startup_parameters`, PgBouncer 1.18 refuses the connection
//!   itself (`unsupported startup parameter: options`): it cannot carry start-up options at all;
//! - with the settings on the database (`ALTER DATABASE … SET`), the worker's pool passes its
//!   check through either pool mode and means `tasklatch.tasks`.
//!
//! PgBouncer must be installed (`scripts/install-deb-tools`): a missing binary fails the test.

#[path = "support/example.rs"]
mod example;

use sqlx::{Connection, PgConnection};
use tasklatch_pg::harness::pgbouncer::{Pgbouncer, PoolMode};
use tasklatch_pg::harness::{LocalCluster, Server, ServerSource, TestDb};
use tasklatch_worker::run::connect;
use tasklatch_worker::StartError;

/// The usual advice for sqlx/JDBC clients behind PgBouncer: ignore what it cannot track.
const IGNORE_OPTIONS: &str = "extra_float_digits,options";

fn cluster() -> LocalCluster {
    LocalCluster::start().unwrap_or_else(|e| {
        panic!("cannot start a throwaway cluster (PostgreSQL server binaries needed): {e}")
    })
}

/// A migrated database on `cluster` holding a host application's `public.tasks` with one row.
async fn database(cluster: &LocalCluster) -> TestDb {
    let server = Server {
        admin_url: cluster.url(),
        source: ServerSource::Throwaway,
    };
    let db = TestDb::create_on(server)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    run(
        &db,
        "CREATE TABLE public.tasks (id text PRIMARY KEY, title text); \
         INSERT INTO public.tasks VALUES ('host-1', 'the host application''s row')",
    )
    .await;
    db
}

fn bouncer(cluster: &LocalCluster, mode: PoolMode, ignore: &str) -> Pgbouncer {
    Pgbouncer::start(cluster.port(), mode, ignore)
        .unwrap_or_else(|e| panic!("cannot start pgbouncer: {e}"))
}

/// The worker's pool through `bouncer`, giving up after 1 s.
async fn worker_pool(bouncer: &Pgbouncer, db: &TestDb) -> Result<sqlx::PgPool, StartError> {
    let settings = example::settings_for(&bouncer.url(db.name()), "connect_timeout_ms = 1000");
    connect(&settings).await
}

#[tokio::test]
async fn a_pooler_that_drops_or_refuses_the_start_up_options_is_refused_loudly() {
    let cluster = cluster();
    let db = database(&cluster).await;

    let transaction = bouncer(&cluster, PoolMode::Transaction, IGNORE_OPTIONS);
    let e = worker_pool(&transaction, &db)
        .await
        .err()
        .unwrap_or_else(|| panic!("a pool without its search_path was opened"));
    let text = e.to_string();
    for words in [
        "search_path is '\"$user\", public'",
        "not 'tasklatch'",
        "pooler",
    ] {
        assert!(text.contains(words), "missing {words:?} in: {text}");
    }

    let session = bouncer(&cluster, PoolMode::Session, "extra_float_digits");
    let e = worker_pool(&session, &db)
        .await
        .err()
        .unwrap_or_else(|| panic!("pgbouncer accepted the options start-up parameter"));
    let text = e.to_string();
    for words in [
        "unsupported startup parameter: options",
        "list options in its ignore_startup_parameters",
    ] {
        assert!(
            text.contains(words),
            "missing {words:?} in: {text}\n{}",
            session.log()
        );
    }
    db.cleanup().await;
}

#[tokio::test]
async fn database_settings_pass_through_either_pool_mode() {
    let cluster = cluster();
    let db = database(&cluster).await;
    let name = db.name().to_owned();
    for setting in [
        "search_path = tasklatch",
        "statement_timeout = '30s'",
        "lock_timeout = '5s'",
    ] {
        run(&db, &format!("ALTER DATABASE \"{name}\" SET {setting}")).await;
    }
    for mode in [PoolMode::Session, PoolMode::Transaction] {
        let bouncer = bouncer(&cluster, mode, IGNORE_OPTIONS);
        let pool = worker_pool(&bouncer, &db)
            .await
            .unwrap_or_else(|e| panic!("{mode:?}: {e}\n{}", bouncer.log()));
        let mut conn = pool.acquire().await.unwrap_or_else(|e| panic!("{e}"));
        let schema: String = sqlx::query_scalar("SELECT current_schema()")
            .persistent(false)
            .fetch_one(&mut *conn)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(schema, "tasklatch", "{mode:?}");
        drop(conn);
        pool.close().await;
    }
    db.cleanup().await;
}

async fn run(db: &TestDb, sql: &str) {
    let mut conn = PgConnection::connect(&tasklatch_pg::harness::with_database(
        db.admin_url(),
        db.name(),
    ))
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let _ = conn.close().await;
}
