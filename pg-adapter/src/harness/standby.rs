//! A streaming standby of a throwaway cluster: `pg_basebackup -R` of the primary, started on a
//! port of its own. With the primary's `synchronous_standby_names` naming it (`'*'` names every
//! standby) it is synchronous; otherwise asynchronous.

use super::{output, LocalCluster};
use sqlx::{Connection, PgConnection};
use std::time::{Duration, Instant};

impl LocalCluster {
    /// A standby of `primary` (blocking; a few seconds): a base backup over the replication
    /// protocol (`-X stream`, `-R` writes `primary_conninfo` and `standby.signal`), started
    /// with `settings` on top of the defaults, its `cluster_name` (the name it reports to the
    /// primary as `application_name`) `standby`. Stopped and removed on drop, like any
    /// [`LocalCluster`]. Fails when `pg_basebackup` is missing or the standby does not start.
    pub fn standby_of(
        primary: &LocalCluster,
        settings: &[(&str, &str)],
    ) -> Result<LocalCluster, String> {
        let mut with_name = vec![("cluster_name", "standby")];
        with_name.extend_from_slice(settings);
        let mut standby = Self::unstarted(&with_name)?;
        if !standby.bin.join("pg_basebackup").is_file() {
            standby.remove_dir();
            return Err(format!("no pg_basebackup in {}", standby.bin.display()));
        }
        let data = standby.data_dir();
        let port = primary.port.to_string();
        let backup = standby.command(
            "pg_basebackup",
            &[
                "-D",
                &data.to_string_lossy(),
                "-R",
                "-X",
                "stream",
                "-c",
                "fast",
                "-h",
                "127.0.0.1",
                "-p",
                &port,
                "-U",
                "postgres",
                "--no-sync",
            ],
        );
        output(&mut { backup }).inspect_err(|_| standby.remove_dir())?;
        standby.start_on_a_free_port()?;
        Ok(standby)
    }

    /// Promotes this standby to a primary (`pg_ctl promote -w`: returns once it takes writes).
    pub fn promote(&self) -> Result<(), String> {
        let data = self.data_dir();
        output(&mut self.command(
            "pg_ctl",
            &["-D", &data.to_string_lossy(), "-w", "-t", "30", "promote"],
        ))
        .map(|_| ())
    }

    /// A throwaway primary started with `settings` and migrated (default schema `tasklatch`,
    /// database `postgres`). Fails with what went wrong (server binaries missing, migration).
    pub async fn migrated_primary(settings: &[(&str, &str)]) -> Result<LocalCluster, String> {
        let primary = LocalCluster::start_with(settings).map_err(|e| {
            format!("cannot start a throwaway primary (PostgreSQL server binaries needed): {e}")
        })?;
        let pool = crate::connect(&primary.url(), 2)
            .await
            .map_err(|e| e.to_string())?;
        crate::migrate(&pool, &crate::SchemaName::default())
            .await
            .map_err(|e| e.to_string())?;
        pool.close().await;
        Ok(primary)
    }

    /// A migrated throwaway primary (default schema) and its asynchronous streaming standby,
    /// made after the migration so it has the schema; waits up to 60 s for it to attach. Fails
    /// with what went wrong (server binaries or `pg_basebackup` missing, no attach).
    pub async fn migrated_primary_and_standby() -> Result<(LocalCluster, LocalCluster), String> {
        let primary = LocalCluster::migrated_primary(&[]).await?;
        let standby = LocalCluster::standby_of(&primary, &[])
            .map_err(|e| format!("cannot make a standby with pg_basebackup: {e}"))?;
        primary
            .wait_for_standby("async", Duration::from_secs(60))
            .await
            .map_err(|e| format!("the standby did not attach: {e}"))?;
        Ok((primary, standby))
    }

    /// Waits up to `within` until this primary shows a standby `streaming` in sync state
    /// `sync_state` (`sync`, `async`, …) in `pg_stat_replication`.
    pub async fn wait_for_standby(&self, sync_state: &str, within: Duration) -> Result<(), String> {
        let start = Instant::now();
        let mut last = String::from("no answer");
        while start.elapsed() < within {
            match self.streaming_standbys(sync_state).await {
                Ok(n) if n > 0 => return Ok(()),
                Ok(_) => last = format!("no standby streaming in sync state {sync_state}"),
                Err(e) => last = e.to_string(),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(format!("{last} within {} ms", within.as_millis()))
    }

    /// Standbys streaming in sync state `sync_state`.
    async fn streaming_standbys(&self, sync_state: &str) -> Result<i64, sqlx::Error> {
        let mut conn = PgConnection::connect(&self.url()).await?;
        let n = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming' AND sync_state = $1",
        )
        .bind(sync_state)
        .fetch_one(&mut conn)
        .await;
        let _ = conn.close().await;
        n
    }
}
