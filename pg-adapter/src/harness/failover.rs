//! Repeated failovers of a throwaway primary and standby pair: the primary's postmaster and its
//! children are SIGKILLed ([`LocalCluster::kill_postmaster`]), the standby promoted
//! ([`LocalCluster::promote`]), the old primary rewound with `pg_rewind` and started as the new
//! primary's standby on its own port again ([`LocalCluster::rejoin_as_standby_of`]) — and the
//! pair can fail over again. `pg_rewind` needs `wal_log_hints = on` (or checksums) on the target
//! and `full_page_writes = on` on the source, so the pair is started with both
//! ([`FAILOVER_SETTINGS`]). Since PostgreSQL 13 it runs crash recovery itself (single-user mode)
//! on a target that was not shut down cleanly — with the configuration files only, not the
//! command line, and a checkpoint that would recycle the WAL back to the last common checkpoint
//! that `pg_rewind` reads — so `wal_log_hints` and `wal_keep_size` are also written with `ALTER
//! SYSTEM` (`postgresql.auto.conf`, which `pg_basebackup` and `pg_rewind` copy along).

use super::{output, LocalCluster};
use sqlx::{Connection, PgConnection};
use std::path::Path;
use std::time::{Duration, Instant};

/// Server settings of both clusters of a failover pair: commits wait for a named standby
/// (the harness default is `synchronous_commit = off`), and `pg_rewind` can rewind either.
pub const FAILOVER_SETTINGS: &[(&str, &str)] = &[
    ("synchronous_commit", "on"),
    ("wal_log_hints", "on"),
    ("full_page_writes", "on"),
];

/// How long a killed postmaster's children get to notice and exit.
const CHILDREN_EXIT_WITHIN: Duration = Duration::from_secs(20);

impl LocalCluster {
    /// A migrated primary (default schema `tasklatch`, database `postgres`) and its streaming
    /// standby, both started with [`FAILOVER_SETTINGS`]. With `synchronous` the primary names
    /// every standby in `synchronous_standby_names` (`'*'`, set with `ALTER SYSTEM` so a promote
    /// can clear it) and the standby is attached as `sync`; otherwise it is `async`. Waits up to
    /// 60 s for the attach. Fails with what went wrong.
    pub async fn failover_pair(synchronous: bool) -> Result<(LocalCluster, LocalCluster), String> {
        let primary = LocalCluster::migrated_primary(FAILOVER_SETTINGS).await?;
        primary.alter_system("wal_log_hints", "on").await?;
        primary.alter_system("wal_keep_size", "1GB").await?;
        let standby = LocalCluster::standby_of(&primary, FAILOVER_SETTINGS)
            .map_err(|e| format!("cannot make a standby with pg_basebackup: {e}"))?;
        primary.set_synchronous(synchronous).await?;
        let state = if synchronous { "sync" } else { "async" };
        primary
            .wait_for_standby(state, Duration::from_secs(60))
            .await
            .map_err(|e| format!("the standby did not attach as {state}: {e}"))?;
        Ok((primary, standby))
    }

    /// Names every standby in `synchronous_standby_names` (`'*'`: commits wait for one) or
    /// none (`''`: standbys are asynchronous), with `ALTER SYSTEM` and a configuration reload
    /// (commits waiting for a standby are released when it becomes empty).
    pub async fn set_synchronous(&self, synchronous: bool) -> Result<(), String> {
        let names = if synchronous { "*" } else { "" };
        self.alter_system("synchronous_standby_names", names).await
    }

    /// `ALTER SYSTEM SET name = 'value'` and a configuration reload (a setting that needs a
    /// restart is only written). `name` and `value` are the caller's constants (no quotes).
    async fn alter_system(&self, name: &str, value: &str) -> Result<(), String> {
        if value.contains('\'') || !name.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
            return Err(format!("not a plain setting: {name} = {value}"));
        }
        let mut conn = PgConnection::connect(&self.url())
            .await
            .map_err(|e| format!("cannot connect to {}: {e}", self.url()))?;
        let sql = format!("ALTER SYSTEM SET {name} = '{value}'");
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(&mut conn)
            .await
            .map_err(|e| format!("ALTER SYSTEM on port {}: {e}", self.port))?;
        sqlx::query("SELECT pg_reload_conf()")
            .execute(&mut conn)
            .await
            .map_err(|e| format!("pg_reload_conf on port {}: {e}", self.port))?;
        let _ = conn.close().await;
        Ok(())
    }

    /// SIGKILLs the postmaster and its children at once, as a crash of the server's host ends
    /// them (a walsender gets no chance to send WAL it has not sent yet; killing the postmaster
    /// alone would let the children run on until they notice), then waits until they are gone
    /// (they hold its shared memory) and
    /// removes its stale `postmaster.pid` and socket lock file (a killed postmaster may linger as a zombie until it is
    /// reaped, and PostgreSQL takes a lock file whose process exists for a running server), so
    /// the data dir can be rewound. Fails when there is no `postmaster.pid`, the signal cannot
    /// be sent, or a child lives on for 20 s.
    pub fn kill_postmaster(&self) -> Result<(), String> {
        let pid_file = self.data_dir().join("postmaster.pid");
        let text = std::fs::read_to_string(&pid_file)
            .map_err(|e| format!("cannot read {}: {e}", pid_file.display()))?;
        let pid: u32 = text
            .lines()
            .next()
            .and_then(|l| l.trim().parse().ok())
            .ok_or_else(|| format!("no pid in {}", pid_file.display()))?;
        let mut family = children_of(pid);
        family.push(pid);
        let pids: Vec<String> = family.iter().map(u32::to_string).collect();
        let kill =
            |pids: &[String]| output(std::process::Command::new("kill").arg("-KILL").args(pids));
        // A child that ended meanwhile makes `kill` fail for it alone: then the postmaster is
        // signalled again by itself, and only that failing while it runs is a failure.
        if kill(&pids).is_err() {
            if let Err(e) = kill(&[pid.to_string()]) {
                if is_alive(pid) {
                    return Err(e);
                }
            }
        }
        let start = Instant::now();
        while let Some(alive) = family.iter().find(|p| is_alive(**p)) {
            if start.elapsed() > CHILDREN_EXIT_WITHIN {
                return Err(format!(
                    "process {alive} of the killed postmaster {pid} still runs after {} s",
                    CHILDREN_EXIT_WITHIN.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let socket = self.dir.join(format!(".s.PGSQL.{}", self.port));
        let _ = std::fs::remove_file(self.dir.join(format!(".s.PGSQL.{}.lock", self.port)));
        let _ = std::fs::remove_file(&socket);
        std::fs::remove_file(&pid_file)
            .map_err(|e| format!("cannot remove {}: {e}", pid_file.display()))
    }

    /// Rewinds this cluster — a former primary, killed or stopped — onto `primary`'s timeline
    /// (a `CHECKPOINT` on `primary` first, then `pg_rewind --source-server`, which recovers an uncleanly stopped target first, and `-R`,
    /// which writes `standby.signal` and a `primary_conninfo` naming `primary`), then starts it
    /// on its own port again as `primary`'s streaming standby (blocking; a few seconds). Fails
    /// with `pg_rewind`'s or `pg_ctl`'s output.
    pub fn rejoin_as_standby_of(&self, primary: &LocalCluster) -> Result<(), String> {
        let source = format!(
            "host=127.0.0.1 port={} user=postgres dbname=postgres",
            primary.port
        );
        // A promoted source's control file names its new timeline only after a checkpoint
        // (the one a promote requests is spread out): without it pg_rewind rewinds from the
        // wrong common checkpoint and the standby cannot start.
        let port = primary.port.to_string();
        let checkpoint = ["-h", "127.0.0.1", "-p", &port, "-U", "postgres", "-X", "-q"];
        let mut psql = self.command("psql", &checkpoint);
        output(psql.args(["-c", "CHECKPOINT", "postgres"]))
            .map_err(|e| format!("CHECKPOINT on the new primary: {e}"))?;
        let data = self.data_dir();
        let mut rewind = self.command(
            "pg_rewind",
            &[
                "-D",
                &data.to_string_lossy(),
                "--source-server",
                &source,
                "-R",
                "--no-sync",
            ],
        );
        rewind.current_dir(&self.dir);
        output(&mut rewind).map_err(|e| format!("pg_rewind: {e}"))?;
        self.pg_ctl_start()
            .map_err(|e| format!("{e}\nits log ends:\n{}", self.log_tail(30)))
    }

    /// The last `n` lines of the server's log.
    pub fn log_tail(&self, n: usize) -> String {
        let log = std::fs::read_to_string(self.dir.join("log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// How far this standby has received and replayed WAL: `true` once both are the same
    /// (after its primary is gone, nothing more arrives and everything received is applied).
    pub async fn replay_caught_up(&self) -> Result<bool, String> {
        let mut conn = PgConnection::connect(&self.url())
            .await
            .map_err(|e| format!("cannot connect to {}: {e}", self.url()))?;
        let caught_up: Option<bool> = sqlx::query_scalar(
            "SELECT pg_last_wal_receive_lsn() IS NULL \
                 OR pg_last_wal_receive_lsn() <= pg_last_wal_replay_lsn()",
        )
        .fetch_one(&mut conn)
        .await
        .map_err(|e| e.to_string())?;
        let _ = conn.close().await;
        Ok(caught_up.unwrap_or(false))
    }
}

/// The processes whose parent is `pid` (read from `/proc`).
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|p| stat_of(*p).is_some_and(|(_, ppid)| ppid == pid))
        .collect()
}

/// A process's state letter and parent pid, from `/proc/<pid>/stat`.
fn stat_of(pid: u32) -> Option<(char, u32)> {
    let text =
        std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("stat")).ok()?;
    // The command name is in parentheses and may hold spaces: the fields follow the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((state, ppid))
}

/// Whether `pid` runs (a zombie has exited: it waits only for a parent to reap it).
fn is_alive(pid: u32) -> bool {
    stat_of(pid).is_some_and(|(state, _)| state != 'Z' && state != 'X')
}
