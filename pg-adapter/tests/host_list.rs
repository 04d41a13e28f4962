//! A host list finds the primary (issue 27 item 1) on real throwaway clusters: with the hosts
//! listed standby first, the pool still lands on the primary and the store writes there; a
//! connection to the standby is refused as read-only by the check every pooled connection of a
//! following pool passes, so such a pool cannot even open on the standby alone; and a write that
//! reaches a standby anyway fails as `Unavailable` (SQLSTATE 25006), never as a permanent error.
//!
//! The clusters are `LocalCluster`s: stopped and removed on drop, a panic included. Missing
//! PostgreSQL binaries fail the test, never skip it.

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection};
use std::str::FromStr;
use std::time::{Duration, Instant};
use tasklatch_core::conformance::support::{policy, submitted, t};
use tasklatch_core::store::{Store, StoreError};
use tasklatch_pg::harness::LocalCluster;
use tasklatch_pg::{
    checked_primary, find_primary, open, open_following, refuse_read_only, store_error, Host,
    PgStore, ReadOnlyServer, Role, SessionSettings, PROBE_TIMEOUT,
};

fn options(cluster: &LocalCluster) -> PgConnectOptions {
    PgConnectOptions::from_str(&cluster.url()).unwrap_or_else(|e| panic!("{e}"))
}

fn host(cluster: &LocalCluster) -> Host {
    Host::parse(&format!("127.0.0.1:{}", cluster.port())).unwrap_or_else(|e| panic!("{e}"))
}

/// A migrated primary and its streaming standby (the harness's pair; a failure is the test's).
async fn primary_and_standby() -> (LocalCluster, LocalCluster) {
    LocalCluster::migrated_primary_and_standby()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn the_pool_finds_the_primary_and_refuses_the_standby() {
    let started = Instant::now();
    let (primary, standby) = primary_and_standby().await;
    let session = SessionSettings::default();
    let base = session.apply(options(&primary));
    let hosts = vec![host(&standby), host(&primary)];

    let found = find_primary(&base, &hosts, PROBE_TIMEOUT).await;
    assert_eq!(found, Ok(host(&primary)), "standby listed first");
    let pool_options = PgPoolOptions::new().max_connections(2);
    let (pool, follower) =
        open_following(pool_options, base.clone(), &session, hosts, PROBE_TIMEOUT)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    let port: i32 = sqlx::query_scalar("SELECT inet_server_port()")
        .fetch_one(&pool)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        port,
        i32::from(primary.port()),
        "the pool is on the primary"
    );
    assert_eq!(follower.status().primary, Some(host(&primary)));
    let store = PgStore::new(pool.clone(), policy());
    store
        .insert_task(submitted("on-the-primary", t(0)))
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    // A connection to the standby is refused by the check…
    let on_standby = host(&standby).apply(&base);
    let mut conn = on_standby.connect().await.unwrap_or_else(|e| panic!("{e}"));
    let refused = refuse_read_only(&mut conn).await.err();
    let read_only = match &refused {
        Some(sqlx::Error::Configuration(inner)) => inner.downcast_ref::<ReadOnlyServer>().cloned(),
        _ => None,
    };
    assert_eq!(
        read_only,
        Some(ReadOnlyServer(Role::Standby)),
        "{refused:?}"
    );
    // …and a write that reaches it is unavailable (retried on the new primary), not invalid.
    let write = sqlx::query("CREATE TABLE tasklatch.nope (x int)")
        .execute(&mut conn)
        .await
        .err()
        .unwrap_or_else(|| panic!("the standby took a write"));
    match store_error(write) {
        StoreError::Unavailable(m) => assert!(m.contains("25006"), "{m}"),
        other => panic!("a read-only refusal mapped to {other:?}"),
    }
    let _ = conn.close().await;

    // A following pool's checks never hand out a standby connection: it cannot open there.
    let standby_only = checked_primary(
        PgPoolOptions::new().acquire_timeout(Duration::from_millis(1500)),
        &session,
        || (),
    );
    assert!(
        open(standby_only, on_standby).await.is_err(),
        "a pool opened on the standby alone"
    );
    pool.close().await;
    eprintln!("host list test took {:?}", started.elapsed());
}
