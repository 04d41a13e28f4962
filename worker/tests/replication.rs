//! The start-up replication check on real throwaway clusters (issue 27 item 2): a primary with
//! an asynchronous standby (`pg_basebackup -R`) is refused with what is at risk, unless
//! `database.allow_async_replication = true`; a primary whose standby is synchronous
//! (`synchronous_standby_names = '*'`) starts, and so does a lone primary — unless
//! `database.hosts` names a second host (then it is refused unless allowed). And a commit waiting
//! for a stopped synchronous standby is not ended by `statement_timeout`; only a cancel ends
//! the wait — and then the commit reports success although only the primary has it.
//!
//! Every cluster is a `LocalCluster`: stopped and removed when dropped, a panic included (and by
//! its watchdog if the process dies). Missing PostgreSQL binaries fail the test, never skip it.

#[path = "support/example.rs"]
mod example;

use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection, PgConnection};
use std::str::FromStr;
use std::time::Duration;
use tasklatch_pg::harness::LocalCluster;
use tasklatch_pg::ReplicationMode;
use tasklatch_worker::config::Settings;
use tasklatch_worker::run::{check_replication, connect};
use tasklatch_worker::StartError;

/// How long a standby gets to attach.
const ATTACH_WITHIN: Duration = Duration::from_secs(60);

/// A cluster started with `settings` (a commit waits for its standbys when they are named).
fn primary(settings: &[(&str, &str)]) -> LocalCluster {
    let mut all = vec![("synchronous_commit", "on")];
    all.extend_from_slice(settings);
    LocalCluster::start_with(&all).unwrap_or_else(|e| {
        panic!("cannot start a throwaway primary (PostgreSQL server binaries needed): {e}")
    })
}

/// A standby of `primary` made with `pg_basebackup -R`, attached in sync state `sync_state`.
async fn standby(primary: &LocalCluster, sync_state: &str) -> LocalCluster {
    let standby = LocalCluster::standby_of(primary, &[])
        .unwrap_or_else(|e| panic!("cannot make a standby with pg_basebackup: {e}"));
    primary
        .wait_for_standby(sync_state, ATTACH_WITHIN)
        .await
        .unwrap_or_else(|e| panic!("the standby did not attach as {sync_state}: {e}"));
    standby
}

/// The example configuration pointed at `cluster`, with `extra` added to `[database]`.
fn settings(cluster: &LocalCluster, extra: &str) -> Settings {
    example::settings_for(&cluster.url(), extra)
}

/// The worker's start-up check on `settings`: its pool, then the replication check.
async fn start_check(settings: &Settings) -> Result<ReplicationMode, StartError> {
    let pool = connect(settings).await.unwrap_or_else(|e| panic!("{e}"));
    let checked = check_replication(&pool, settings).await;
    pool.close().await;
    checked
}

#[tokio::test]
async fn an_asynchronous_standby_is_refused_unless_allowed() {
    let primary = primary(&[]);
    let _standby = standby(&primary, "async").await;

    let e = start_check(&settings(&primary, ""))
        .await
        .err()
        .unwrap_or_else(|| panic!("started with an asynchronous standby"));
    let text = e.to_string();
    assert!(matches!(e, StartError::Replication(_)), "{text}");
    for words in [
        "1 standby(s) attached but synchronous_standby_names is empty",
        "submits, cancels and answers the API acknowledged",
        "notifications recorded as delivered",
        "synchronous_standby_names",
        "database.allow_async_replication = true",
    ] {
        assert!(text.contains(words), "missing {words:?} in: {text}");
    }

    let allowed = settings(&primary, "allow_async_replication = true");
    let mode = start_check(&allowed)
        .await
        .unwrap_or_else(|e| panic!("refused although allowed: {e}"));
    assert!(matches!(mode, ReplicationMode::AtRisk(_)), "{mode}");
}

#[tokio::test]
async fn a_synchronous_standby_and_a_lone_primary_start() {
    let primary = primary(&[("synchronous_standby_names", "*")]);
    let _standby = standby(&primary, "sync").await;
    let mode = start_check(&settings(&primary, ""))
        .await
        .unwrap_or_else(|e| panic!("refused with a synchronous standby: {e}"));
    let sync = ReplicationMode::Synchronous {
        synchronous: 1,
        attached: 1,
    };
    assert_eq!(mode, sync);

    let lone = self::primary(&[]);
    let mode = start_check(&settings(&lone, ""))
        .await
        .unwrap_or_else(|e| panic!("refused a lone primary: {e}"));
    assert_eq!(mode, ReplicationMode::Standalone);

    // The same lone primary with a host list that names a second host (the pool still finds
    // the primary, listed second): nothing receives its commits, so it is refused unless allowed.
    let hosts = format!(
        "hosts = [\"127.0.0.1:{}\", \"127.0.0.1:{}\"]",
        primary.port(),
        lone.port()
    );
    let _ = primary.stop();
    let e = start_check(&settings(&lone, &hosts))
        .await
        .err()
        .unwrap_or_else(|| panic!("a lone primary of a two-host list started"));
    let text = e.to_string();
    assert!(text.contains("database.hosts lists 2 hosts"), "{text}");
    let allowed = format!("{hosts}\nallow_async_replication = true");
    let mode = start_check(&settings(&lone, &allowed))
        .await
        .unwrap_or_else(|e| panic!("refused although allowed: {e}"));
    assert_eq!(mode, ReplicationMode::Standalone);
}

/// Stops the synchronous standby, then commits with a 300 ms statement timeout: after ten times
/// that the commit still waits (`SyncRep`); `pg_cancel_backend` ends the wait, and the commit
/// reports success (with a warning) for a row only the primary has.
#[tokio::test]
async fn statement_timeout_does_not_end_a_commit_wait_for_the_standby() {
    let primary = primary(&[("synchronous_standby_names", "*")]);
    let standby = standby(&primary, "sync").await;
    let mut admin = PgConnection::connect(&primary.url())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    exec(&mut admin, "CREATE TABLE acknowledged (id int)").await;
    standby
        .stop()
        .unwrap_or_else(|e| panic!("stopping the standby: {e}"));

    let opts = PgConnectOptions::from_str(&primary.url())
        .unwrap_or_else(|e| panic!("{e}"))
        .options([("statement_timeout", "300ms")]);
    let mut writer = opts.connect().await.unwrap_or_else(|e| panic!("{e}"));
    let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&mut writer)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let insert = tokio::spawn(async move {
        let done = sqlx::query("INSERT INTO acknowledged VALUES (1)")
            .execute(&mut writer)
            .await;
        (done.map(|r| r.rows_affected()), writer)
    });
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!insert.is_finished(), "the commit ended within 3 s");
    let waiting: Option<String> =
        sqlx::query_scalar("SELECT wait_event FROM pg_stat_activity WHERE pid = $1")
            .bind(pid)
            .fetch_one(&mut admin)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(waiting.as_deref(), Some("SyncRep"));

    exec(&mut admin, &format!("SELECT pg_cancel_backend({pid})")).await;
    let (done, _writer) = tokio::time::timeout(Duration::from_secs(10), insert)
        .await
        .unwrap_or_else(|_| panic!("the cancelled commit did not end"))
        .unwrap_or_else(|e| panic!("{e}"));
    let rows = done.unwrap_or_else(|e| panic!("the cancelled commit failed: {e}"));
    assert_eq!(rows, 1, "the cancelled commit reports success");
    let kept: i64 = sqlx::query_scalar("SELECT count(*) FROM acknowledged")
        .fetch_one(&mut admin)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(kept, 1, "the row is committed on the primary alone");
}

async fn exec(conn: &mut PgConnection, sql: &str) {
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(conn)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}
