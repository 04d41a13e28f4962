//! A throwaway PgBouncer in front of a server, for the pooler tests: its own temp dir
//! (configuration, user list, log), a free port on 127.0.0.1, every database forwarded to the
//! server, trust auth for user `postgres`. Run as the unprivileged user when this process is
//! root (`-u`); killed and its dir removed on drop, and by a watchdog when this process exits
//! without dropping it.

use super::{free_port, id_of, random_u64, spawn_watchdog, unprivileged_user};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where Debian's package puts the binary (`scripts/install-deb-tools` installs it).
pub const PGBOUNCER_BIN: &str = "/usr/sbin/pgbouncer";

/// Installs PgBouncer with the repository's `scripts/install-deb-tools` when its binary is
/// missing, so that `cargo test --workspace` alone brings what the pooler tests need; fails
/// with the script's exit status and what to do when it cannot.
/// Once per process: the tests of one binary run in parallel, and two apt-gets would collide.
fn install_if_missing() -> Result<(), String> {
    static INSTALLED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    INSTALLED.get_or_init(install_now).clone()
}

fn install_now() -> Result<(), String> {
    if std::path::Path::new(PGBOUNCER_BIN).is_file() {
        return Ok(());
    }
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(|root| root.join("scripts/install-deb-tools"))
        .filter(|script| script.is_file())
        .ok_or_else(|| {
            format!("no {PGBOUNCER_BIN} and no scripts/install-deb-tools to install it")
        })?;
    let status = Command::new("bash")
        .arg(&repo)
        .status()
        .map_err(|e| format!("cannot run {}: {e}", repo.display()))?;
    if status.success() && std::path::Path::new(PGBOUNCER_BIN).is_file() {
        return Ok(());
    }
    Err(format!(
        "no {PGBOUNCER_BIN}: {} ended with {status}; install the Debian package pgbouncer",
        repo.display()
    ))
}

/// How the pooler hands out server connections (`pool_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolMode {
    /// A client keeps one server connection for its whole session.
    Session,
    /// A client holds a server connection only for each transaction.
    Transaction,
}

/// A running PgBouncer.
pub struct Pgbouncer {
    dir: PathBuf,
    port: u16,
    child: Child,
}

impl Pgbouncer {
    /// Starts PgBouncer in front of `127.0.0.1:server_port` with `mode` and
    /// `ignore_startup_parameters = ignore` (e.g. `"extra_float_digits,options"`); waits until
    /// it accepts connections (at most 10 s). Fails when the binary is missing or it does not
    /// start (its log is quoted).
    pub fn start(server_port: u16, mode: PoolMode, ignore: &str) -> Result<Pgbouncer, String> {
        Pgbouncer::start_sized(server_port, mode, ignore, 100)
    }

    /// [`Pgbouncer::start`] with at most `pool_size` server connections per database and user
    /// (`default_pool_size`; 1 makes every client share one server backend).
    pub fn start_sized(
        server_port: u16,
        mode: PoolMode,
        ignore: &str,
        pool_size: u32,
    ) -> Result<Pgbouncer, String> {
        install_if_missing()?;
        let run_as = unprivileged_user()?;
        let dir = std::env::temp_dir().join(format!(
            "tasklatch-pgbouncer-{}-{:08x}",
            std::process::id(),
            random_u64() as u32
        ));
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {dir:?}: {e}"))?;
        let port = free_port()?;
        let ini = config(&dir, port, server_port, mode, ignore, pool_size);
        let written = std::fs::write(dir.join("pgbouncer.ini"), ini)
            .and_then(|()| std::fs::write(dir.join("userlist.txt"), "\"postgres\" \"\"\n"));
        if let Err(e) = written
            .map_err(|e| e.to_string())
            .and_then(|()| hand_over(&dir, &run_as))
        {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(format!("cannot prepare {dir:?}: {e}"));
        }
        let mut command = Command::new(PGBOUNCER_BIN);
        if let Some(user) = &run_as {
            command.arg("-u").arg(user);
        }
        command.arg(dir.join("pgbouncer.ini"));
        let spawned = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let child = match spawned {
            Ok(child) => child,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(format!("cannot run {PGBOUNCER_BIN}: {e}"));
            }
        };
        let bouncer = Pgbouncer { dir, port, child };
        bouncer.spawn_watchdog();
        bouncer.wait_listening(Duration::from_secs(10))?;
        Ok(bouncer)
    }

    /// The URL of database `db` through the pooler, as user `postgres`.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{db}", self.port)
    }

    /// What PgBouncer logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("pgbouncer.log")).unwrap_or_default()
    }

    fn wait_listening(&self, within: Duration) -> Result<(), String> {
        let start = Instant::now();
        while start.elapsed() < within {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(format!(
            "pgbouncer did not listen within 10 s: {}",
            self.log()
        ))
    }

    /// A detached shell that kills PgBouncer and removes its dir once this process is gone.
    fn spawn_watchdog(&self) {
        spawn_watchdog(&format!(
            "kill -9 {child} 2>/dev/null; rm -rf '{dir}'",
            child = self.child.id(),
            dir = self.dir.display()
        ));
    }
}

impl Drop for Pgbouncer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The configuration file's text: `pool_size` server connections per database and user, room
/// for 300 clients (PgBouncer's defaults are 20 and 100; in session pooling every client holds
/// a server connection, and the stress run's pools need about 30; the throwaway cluster allows
/// 200 connections).
fn config(
    dir: &std::path::Path,
    port: u16,
    server: u16,
    mode: PoolMode,
    ignore: &str,
    pool_size: u32,
) -> String {
    let mode = match mode {
        PoolMode::Session => "session",
        PoolMode::Transaction => "transaction",
    };
    let d = dir.display();
    format!(
        "[databases]\n* = host=127.0.0.1 port={server}\n\n[pgbouncer]\nlisten_addr = 127.0.0.1\n\
         listen_port = {port}\nunix_socket_dir =\nauth_type = trust\nauth_file = {d}/userlist.txt\n\
         pool_mode = {mode}\nignore_startup_parameters = {ignore}\nlogfile = {d}/pgbouncer.log\n\
         pidfile = {d}/pgbouncer.pid\nadmin_users = postgres\n\
         default_pool_size = {pool_size}\nmax_client_conn = 300\n"
    )
}

/// Gives `dir` and its files to `user` (PgBouncer writes its log and pid file there).
fn hand_over(dir: &std::path::Path, user: &Option<String>) -> Result<(), String> {
    let Some(user) = user else { return Ok(()) };
    let (uid, gid) = (id_of(&["-u", user])?, id_of(&["-g", user])?);
    for path in [
        dir.to_path_buf(),
        dir.join("pgbouncer.ini"),
        dir.join("userlist.txt"),
    ] {
        std::os::unix::fs::chown(&path, Some(uid), Some(gid))
            .map_err(|e| format!("cannot hand {path:?} to {user}: {e}"))?;
    }
    Ok(())
}
