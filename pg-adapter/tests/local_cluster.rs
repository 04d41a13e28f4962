//! The harness's third path works on this machine: with `TASKLATCH_PG_FORCE_LOCAL_CLUSTER=1`
//! (set here, in this test binary's own process, before anything else runs) the server is a
//! throwaway cluster started from the local PostgreSQL binaries — as an unprivileged user when
//! running as root — and a fresh database on it is usable by the store.

use std::time::Duration;
use tasklatch_core::lease::LeaseKind;
use tasklatch_core::policy::Policy;
use tasklatch_core::store::{ClaimRequest, Store};
use tasklatch_core::time::Timestamp;
use tasklatch_core::transitions::submit::new_row;
use tasklatch_pg::harness::{self, LocalCluster, ServerSource, TestDb, FORCE_LOCAL_CLUSTER_ENV};
use tasklatch_pg::PgStore;

#[tokio::test]
async fn forced_throwaway_cluster_serves_test_databases() {
    std::env::set_var(FORCE_LOCAL_CLUSTER_ENV, "1");
    let server = harness::server().await.expect("a throwaway cluster");
    assert_eq!(server.source, ServerSource::Throwaway);
    assert!(!server.admin_url.contains(":5432/"), "{}", server.admin_url);
    let db = TestDb::create().await;
    assert_eq!(db.source(), ServerSource::Throwaway);
    let store = PgStore::new(db.pool().clone(), Policy::default());
    let now = Timestamp::from_micros(1_000_000);
    let identity = tasklatch_core::task::Identity {
        task_id: "a".into(),
        owner: "alice".into(),
        thread: "th".into(),
        server: "srv".into(),
        name: "n".into(),
        handle: tasklatch_core::secret::RemoteHandle {
            remote_task_id: tasklatch_core::secret::Secret::new("r"),
            driver_data: tasklatch_core::secret::Secret::new("d"),
        },
        created_at: now,
    };
    store
        .insert_task(new_row(identity, None, now, &Policy::default()))
        .await
        .unwrap();
    let claimed = store
        .claim(
            LeaseKind::Poll,
            ClaimRequest {
                worker: "w".into(),
                now,
                lease_for: Duration::from_secs(60),
                limit: 10,
            },
        )
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    let name = db.name().to_owned();
    let admin = db.admin_url().to_owned();
    db.cleanup().await;
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&admin)
        .await
        .unwrap();
    let left: i64 = sqlx::query_scalar("SELECT count(*) FROM pg_database WHERE datname = $1")
        .bind(&name)
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(left, 0, "the test database is dropped");
}

/// The cluster API on its own: start, answer, stop and clean up on drop.
#[tokio::test]
async fn local_cluster_starts_and_stops() {
    let cluster = tokio::task::spawn_blocking(LocalCluster::start)
        .await
        .unwrap()
        .expect("local PostgreSQL binaries");
    let dir = cluster.dir().to_owned();
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&cluster.url())
        .await
        .unwrap();
    let one: i32 = sqlx::query_scalar("SELECT 1")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(one, 1);
    drop(conn);
    tokio::task::spawn_blocking(move || drop(cluster))
        .await
        .unwrap();
    assert!(!dir.exists(), "the temp dir is removed");
}
