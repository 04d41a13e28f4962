//! Test databases (DESIGN "pg-adapter": every test gets its own fresh database).
//!
//! [`TestDb::create`] makes a uniquely named database (process-wide counter, pid and a random
//! suffix), migrates it and drops it again on [`TestDb::cleanup`] or, failing that, on drop.
//! The server is chosen once per process:
//!
//! 1. `DATABASE_URL`, if set (any database on the server; used as the admin connection);
//! 2. else the local server `postgres://postgres@127.0.0.1:5432/postgres`, if it answers;
//! 3. else a throwaway cluster started from local PostgreSQL binaries ([`LocalCluster`]): a temp
//!    data dir, a random free port, the unix socket in the temp dir, run as an unprivileged user
//!    (`postgres`, else `nobody`) when the process is root, stopped when the process exits;
//! 4. else a panic that says how to get one. Never a silent skip.
//!
//! `TASKLATCH_PG_FORCE_LOCAL_CLUSTER=1` skips steps 1 and 2 (used by a test that proves step 3
//! works on this machine).
//!
//! For the replication and pooler tests: [`LocalCluster::start_with`] (server settings on the
//! command line), [`LocalCluster::standby_of`] (a streaming standby made with `pg_basebackup
//! -R`, module `standby`), repeated failovers of such a pair (SIGKILL, promote, `pg_rewind`
//! and rejoin, module [`failover`]) and [`pgbouncer::Pgbouncer`] (Debian's PgBouncer in front of
//! a server).

use crate::{connect, migrate, SchemaName};
use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection, PgConnection, PgPool};
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;
use tokio::sync::OnceCell;

pub mod failover;
pub mod pgbouncer;
mod standby;

/// The local server tried when `DATABASE_URL` is not set.
pub const LOCAL_SERVER_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// The environment variable that forces the throwaway-cluster path.
pub const FORCE_LOCAL_CLUSTER_ENV: &str = "TASKLATCH_PG_FORCE_LOCAL_CLUSTER";

const HOW_TO_GET_ONE: &str = "no PostgreSQL server for the tests: set DATABASE_URL to a \
     server where the user may CREATE DATABASE (e.g. postgres://postgres@127.0.0.1:5432/postgres), \
     or run PostgreSQL on 127.0.0.1:5432 with user `postgres` and trust auth, or install the \
     PostgreSQL server binaries (Debian: `apt-get install postgresql`; initdb and pg_ctl are \
     looked for in $TASKLATCH_PG_BIN, /usr/lib/postgresql/*/bin, /usr/local/pgsql/bin and PATH) \
     so the tests can start a throwaway cluster";

/// Why no test database could be had.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HarnessError(pub String);

/// Where the test databases are created: an admin connection URL to a server.
#[derive(Clone, Debug)]
pub struct Server {
    /// Connects to a database on the server as a user that may create databases.
    pub admin_url: String,
    /// How it was found.
    pub source: ServerSource,
}

/// How the server was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerSource {
    /// `DATABASE_URL`.
    Env,
    /// The local server on 127.0.0.1:5432.
    Local,
    /// A throwaway cluster started by this process.
    Throwaway,
}

static SERVER: OnceCell<Result<Server, String>> = OnceCell::const_new();
static CLUSTER: OnceLock<LocalCluster> = OnceLock::new();
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A random 64-bit value from the standard library's per-process hash keys and the time (for
/// unique names, not for anything that must be unpredictable).
pub fn random_u64() -> u64 {
    let mut h = RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.finish()
}

async fn answers(url: &str) -> bool {
    let Ok(opts) = PgConnectOptions::from_str(url) else {
        return false;
    };
    matches!(
        tokio::time::timeout(Duration::from_secs(3), opts.connect()).await,
        Ok(Ok(_))
    )
}

async fn find_server() -> Result<Server, String> {
    let forced = std::env::var(FORCE_LOCAL_CLUSTER_ENV).is_ok_and(|v| v == "1");
    if !forced {
        if let Ok(url) = std::env::var("DATABASE_URL") {
            if !url.is_empty() {
                return Ok(Server {
                    admin_url: url,
                    source: ServerSource::Env,
                });
            }
        }
        if answers(LOCAL_SERVER_URL).await {
            return Ok(Server {
                admin_url: LOCAL_SERVER_URL.to_owned(),
                source: ServerSource::Local,
            });
        }
    }
    let cluster = match CLUSTER.get() {
        Some(c) => c,
        None => {
            let started = tokio::task::spawn_blocking(LocalCluster::start)
                .await
                .map_err(|e| format!("starting a throwaway cluster panicked: {e}"))?
                .map_err(|e| format!("{HOW_TO_GET_ONE} (throwaway cluster: {e})"))?;
            // A concurrent starter may have won; the loser's cluster stops when dropped.
            let _ = CLUSTER.set(started);
            CLUSTER
                .get()
                .ok_or_else(|| "throwaway cluster vanished".to_owned())?
        }
    };
    Ok(cluster.server())
}

/// The server test databases are created on (chosen once per process, see the module docs).
pub async fn server() -> Result<Server, HarnessError> {
    SERVER
        .get_or_init(find_server)
        .await
        .clone()
        .map_err(HarnessError)
}

/// `url` with its database name replaced by `db`.
pub fn with_database(url: &str, db: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(i) => (&url[..i + 3], &url[i + 3..]),
        None => ("", url),
    };
    let (before_query, query) = match rest.find('?') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let authority = before_query.split('/').next().unwrap_or(before_query);
    format!("{scheme}{authority}/{db}{query}")
}

/// `url` whose connections start with `schema` as their `search_path` (a startup option in the
/// query string: `options[search_path]=<schema>`).
pub fn with_search_path(url: &str, schema: &SchemaName) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}options[search_path]={schema}")
}

/// Creates a uniquely named database on `server`: its name and plain URL.
async fn create_database(server: &Server) -> Result<(String, String), HarnessError> {
    let name = format!(
        "tasklatch_t{}_{}_{:08x}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        random_u64() as u32
    );
    let mut conn = admin(&server.admin_url).await?;
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
        .execute(&mut conn)
        .await
        .map_err(|e| HarnessError(format!("cannot create database {name}: {e}")))?;
    let _ = conn.close().await;
    let url = with_database(&server.admin_url, &name);
    Ok((name, url))
}

async fn admin(url: &str) -> Result<PgConnection, HarnessError> {
    PgConnection::connect(url)
        .await
        .map_err(|e| HarnessError(format!("cannot connect to {url}: {e}")))
}

/// A fresh, migrated database of its own, dropped afterwards.
pub struct TestDb {
    name: String,
    admin_url: String,
    url: String,
    pool: PgPool,
    source: ServerSource,
    dropped: bool,
}

impl TestDb {
    /// A fresh migrated database. Panics with instructions when no server can be had (a test
    /// that needs Postgres must never pass silently without one).
    pub async fn create() -> TestDb {
        match Self::try_create().await {
            Ok(db) => db,
            Err(e) => panic!("{e}"),
        }
    }

    /// A fresh migrated database, or why none can be had.
    pub async fn try_create() -> Result<TestDb, HarnessError> {
        Self::create_on(server().await?).await
    }

    /// A fresh migrated database on `server` (e.g. a server given on a command line): migrated
    /// into the default schema (`tasklatch`); its [`TestDb::url`] selects that schema
    /// (`options[search_path]=tasklatch`), so raw connections of tests see the tables.
    pub async fn create_on(server: Server) -> Result<TestDb, HarnessError> {
        let schema = SchemaName::default();
        let (name, plain_url) = create_database(&server).await?;
        let url = with_search_path(&plain_url, &schema);
        let pool = connect(&url, 10)
            .await
            .map_err(|e| HarnessError(format!("cannot connect to {name}: {e}")))?;
        migrate(&pool, &schema)
            .await
            .map_err(|e| HarnessError(format!("cannot migrate {name}: {e}")))?;
        Ok(TestDb {
            name,
            admin_url: server.admin_url,
            url,
            pool,
            source: server.source,
            dropped: false,
        })
    }

    /// A fresh, empty database (nothing migrated) on the test server, dropped afterwards, as a
    /// host application sees it: [`TestDb::url`] and [`TestDb::pool`] have no session settings
    /// (the server's default `search_path`, no timeouts).
    pub async fn create_empty() -> TestDb {
        match Self::try_create_empty().await {
            Ok(db) => db,
            Err(e) => panic!("{e}"),
        }
    }

    async fn try_create_empty() -> Result<TestDb, HarnessError> {
        let server = server().await?;
        let (name, url) = create_database(&server).await?;
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(4)
            .connect(&url)
            .await
            .map_err(|e| HarnessError(format!("cannot connect to {name}: {e}")))?;
        Ok(TestDb {
            name,
            admin_url: server.admin_url,
            url,
            pool,
            source: server.source,
            dropped: false,
        })
    }

    /// A pool on the database (at most 10 connections).
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// The database's URL, for more pools or processes.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The admin URL of the server the database lives on.
    pub fn admin_url(&self) -> &str {
        &self.admin_url
    }

    /// How the server was found.
    pub fn source(&self) -> ServerSource {
        self.source
    }

    /// Closes the pool and drops the database (terminating any other connection to it).
    pub async fn cleanup(mut self) {
        self.pool.close().await;
        let _ = drop_database(&self.admin_url, &self.name).await;
        self.dropped = true;
    }
}

async fn drop_database(admin_url: &str, name: &str) -> Result<(), HarnessError> {
    let mut conn = admin(admin_url).await?;
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
    )))
    .execute(&mut conn)
    .await
    .map_err(|e| HarnessError(format!("cannot drop database {name}: {e}")))?;
    let _ = conn.close().await;
    Ok(())
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if self.dropped {
            return;
        }
        let admin_url = self.admin_url.clone();
        let name = self.name.clone();
        // Drop cannot await: drop the database from a helper thread with its own runtime.
        let dropper = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            let _ = rt.block_on(drop_database(&admin_url, &name));
        });
        let _ = dropper.join();
    }
}

/// A throwaway PostgreSQL cluster started from local binaries: temp data dir, random free port
/// on 127.0.0.1, unix socket in the temp dir, trust auth for user `postgres`, no fsync (it is
/// thrown away). Stopped and deleted on drop, and by a watchdog process when this process exits
/// without dropping it (a cluster kept in a static).
pub struct LocalCluster {
    dir: PathBuf,
    port: u16,
    bin: PathBuf,
    run_as: Option<String>,
    /// Server settings given on the command line after the defaults (`-c name='value'`).
    settings: Vec<(String, String)>,
}

fn pg_bin_dir() -> Option<PathBuf> {
    let has = |d: &Path| d.join("initdb").is_file() && d.join("pg_ctl").is_file();
    if let Ok(d) = std::env::var("TASKLATCH_PG_BIN") {
        let d = PathBuf::from(d);
        if has(&d) {
            return Some(d);
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_string_lossy().parse::<u32>().ok()?;
            Some((v, e.path().join("bin")))
        })
        .filter(|(_, d)| has(d))
        .collect();
    versions.sort();
    if let Some((_, d)) = versions.pop() {
        return Some(d);
    }
    let local = PathBuf::from("/usr/local/pgsql/bin");
    if has(&local) {
        return Some(local);
    }
    std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).find(|d| has(d)))
}

fn output(cmd: &mut Command) -> Result<String, String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// How many ports a throwaway cluster tries before giving up (another process may take a free
/// port before the server binds it).
const START_TRIES: usize = 3;

/// The user to run the cluster as when this process is root (PostgreSQL refuses to run as
/// root): `postgres`, else `nobody`; `None` when not root.
fn unprivileged_user() -> Result<Option<String>, String> {
    if id_of(&["-u"])? != 0 {
        return Ok(None);
    }
    let user = ["postgres", "nobody"]
        .into_iter()
        .find(|u| id_of(&["-u", u]).is_ok())
        .ok_or("running as root and neither user `postgres` nor `nobody` exists")?;
    Ok(Some(user.to_owned()))
}

fn id_of(args: &[&str]) -> Result<u32, String> {
    output(Command::new("id").args(args))?
        .parse()
        .map_err(|_| format!("`id {}` gave no number", args.join(" ")))
}

impl LocalCluster {
    /// Starts a cluster (blocking; takes a few seconds). Fails when no binaries are found or
    /// the cluster does not start.
    pub fn start() -> Result<LocalCluster, String> {
        Self::start_with(&[])
    }

    /// [`LocalCluster::start`] with these server settings on top of the defaults (they win:
    /// e.g. `("synchronous_commit", "on")`). A value must not hold a single quote.
    pub fn start_with(settings: &[(&str, &str)]) -> Result<LocalCluster, String> {
        let mut cluster = Self::unstarted(settings)?;
        cluster.initdb().inspect_err(|_| cluster.remove_dir())?;
        cluster.start_on_a_free_port()?;
        Ok(cluster)
    }

    /// A new, empty temp dir (owned by the unprivileged user when root) and no server yet.
    fn unstarted(settings: &[(&str, &str)]) -> Result<LocalCluster, String> {
        if let Some((name, _)) = settings.iter().find(|(_, v)| v.contains('\'')) {
            return Err(format!("the value of {name} holds a single quote"));
        }
        let bin = pg_bin_dir().ok_or("no initdb/pg_ctl found")?;
        let run_as = unprivileged_user()?;
        let dir = std::env::temp_dir().join(format!(
            "tasklatch-pg-{}-{:08x}",
            std::process::id(),
            random_u64() as u32
        ));
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {dir:?}: {e}"))?;
        if let Some(user) = &run_as {
            let uid = id_of(&["-u", user])?;
            let gid = id_of(&["-g", user])?;
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid))
                .map_err(|e| format!("cannot hand {dir:?} to {user}: {e}"))?;
        }
        let settings = settings
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Ok(LocalCluster {
            dir,
            port: 0,
            bin,
            run_as,
            settings,
        })
    }

    /// Starts the server of an initialised data dir on a free port (a few tries), with its
    /// watchdog; removes the dir when it cannot.
    fn start_on_a_free_port(&mut self) -> Result<(), String> {
        let mut last = String::new();
        for _ in 0..START_TRIES {
            self.port = free_port()?;
            match self.pg_ctl_start() {
                Ok(()) => {
                    self.spawn_watchdog();
                    return Ok(());
                }
                Err(e) => last = e,
            }
        }
        self.remove_dir();
        Err(format!("pg_ctl start failed: {last}"))
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// A fresh data dir: trust auth for `postgres`, UTF-8, C locale, no sync.
    fn initdb(&self) -> Result<(), String> {
        let data = self.data_dir();
        output(&mut self.command(
            "initdb",
            &[
                "-D",
                &data.to_string_lossy(),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
        ))
        .map(|_| ())
    }

    /// Starts the server on `self.port` (127.0.0.1 and a socket in the temp dir), waiting up to
    /// a minute for it to accept connections.
    fn pg_ctl_start(&self) -> Result<(), String> {
        let mut opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off \
             -c synchronous_commit=off -c full_page_writes=off -c max_connections=200",
            self.port,
            self.dir.display()
        );
        for (name, value) in &self.settings {
            opts.push_str(&format!(" -c {name}='{value}'"));
        }
        output(&mut self.command(
            "pg_ctl",
            &[
                "-D",
                &self.data_dir().to_string_lossy(),
                "-l",
                &self.dir.join("log").to_string_lossy(),
                "-w",
                "-t",
                "60",
                "-o",
                &opts,
                "start",
            ],
        ))
        .map(|_| ())
    }

    /// This cluster as a [`Server`] test databases can be created on.
    pub fn server(&self) -> Server {
        Server {
            admin_url: self.url(),
            source: ServerSource::Throwaway,
        }
    }

    /// The admin URL (database `postgres`, user `postgres`).
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The temp dir holding the data dir, the socket and the log.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn command(&self, tool: &str, args: &[&str]) -> Command {
        let exe = self.bin.join(tool);
        match &self.run_as {
            None => {
                let mut c = Command::new(exe);
                c.args(args);
                c
            }
            Some(user) => {
                let mut c = Command::new("runuser");
                c.arg("-u").arg(user).arg("--").arg(exe).args(args);
                c
            }
        }
    }

    fn stop_command(&self) -> Command {
        let data = self.data_dir();
        self.command(
            "pg_ctl",
            &[
                "-D",
                &data.to_string_lossy(),
                "-m",
                "immediate",
                "-w",
                "stop",
            ],
        )
    }

    /// A detached shell that waits for this process to end, then stops the cluster and removes
    /// its directory (a cluster kept in a static is never dropped).
    fn spawn_watchdog(&self) {
        let stop = self.stop_command();
        let mut words: Vec<String> = vec![stop.get_program().to_string_lossy().into_owned()];
        words.extend(stop.get_args().map(|a| a.to_string_lossy().into_owned()));
        let quoted: Vec<String> = words
            .iter()
            .map(|w| format!("'{}'", w.replace('\'', "'\\''")))
            .collect();
        spawn_watchdog(&format!(
            "{stop} >/dev/null 2>&1; rm -rf '{dir}'",
            stop = quoted.join(" "),
            dir = self.dir.display()
        ));
    }

    fn remove_dir(&self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }

    /// Stops the server at once (`pg_ctl stop -m immediate`), keeping its dir (removed on drop).
    pub fn stop(&self) -> Result<(), String> {
        output(&mut self.stop_command()).map(|_| ())
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        let _ = output(&mut self.stop_command());
        self.remove_dir();
    }
}

fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

/// Starts a detached shell that waits for this process to end, then runs `cleanup` (a shell
/// command line): what a throwaway server kept in a static, never dropped, relies on.
fn spawn_watchdog(cleanup: &str) {
    let script = format!(
        "while kill -0 {pid} 2>/dev/null; do sleep 1; done; {cleanup}",
        pid = std::process::id()
    );
    let _ = Command::new("sh")
        .arg("-c")
        .arg(script)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_is_replaced_in_urls() {
        assert_eq!(
            with_database("postgres://u@h:1/postgres", "x"),
            "postgres://u@h:1/x"
        );
        assert_eq!(
            with_database("postgres://u@h:1/db?sslmode=disable", "x"),
            "postgres://u@h:1/x?sslmode=disable"
        );
        assert_eq!(with_database("postgres://u@h", "x"), "postgres://u@h/x");
    }
}
