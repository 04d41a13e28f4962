//! A worker run in the test's own process (`tasklatch_worker::run`, the function the
//! `tasklatch worker` command calls) on a real database, reached over HTTP; and an Agent Server
//! double that only answers the assistant check. Used by the tests that need the whole worker
//! (start-up order, `/readyz`, `/metrics`) without building the command-line binary.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};
use tasklatch_worker::config::{parse, Settings};
use tasklatch_worker::StartError;
use tokio::task::JoinHandle;

/// How long a worker may take to answer `/readyz` with 200.
pub const READY_WITHIN: Duration = Duration::from_secs(30);
/// The environment variable the configs below read the database URL from.
pub const DATABASE_ENV: &str = "LIVE_DATABASE_URL";
/// The API token of owner `alice` in [`config`].
pub const TOKEN: &str = "live-token";

/// A worker configuration: API on `port`, one MCP server `research` at `mcp`, the Agent
/// Server at `agent` (assistant `echo`), the database URL from [`DATABASE_ENV`], short
/// timeouts and a 200 ms tick.
pub fn config(port: u16, mcp: u16, agent: u16) -> String {
    format!(
        r#"
[database]
url = "env:{DATABASE_ENV}"
pool_size = 4
[loops]
tick_ms = 200
[http]
listen = "127.0.0.1:{port}"
[auth]
tokens = [{{ owner = "alice", sha256 = "{hash}" }}]
[servers.research]
url = "http://127.0.0.1:{mcp}/mcp"
protocol = "extension"
request_timeout_ms = 2000
[agent_server]
base_url = "http://127.0.0.1:{agent}"
assistant_id = "echo"
request_timeout_ms = 2000
"#,
        hash = tasklatch_worker::token::hash_token(TOKEN)
    )
}

/// `text` checked into settings, with `database_url` for [`DATABASE_ENV`].
pub fn settings(text: &str, database_url: &str) -> Settings {
    let env = |k: &str| (k == DATABASE_ENV).then(|| database_url.to_owned());
    let file = parse(text, &env).unwrap_or_else(|e| panic!("{e}"));
    Settings::check(file).unwrap_or_else(|e| panic!("{e}"))
}

/// A worker running in this process.
pub struct LiveWorker {
    /// Its API port.
    pub port: u16,
    run: JoinHandle<Result<(), StartError>>,
    http: reqwest::Client,
}

impl LiveWorker {
    /// Starts `tasklatch_worker::run(settings)` on `port` (the settings' listen port) and waits
    /// until `/readyz` answers 200. `Err` with the start error when the worker stopped instead
    /// (it refused to start); panics when it is neither ready nor stopped within
    /// [`READY_WITHIN`].
    pub async fn start(settings: Settings) -> Result<LiveWorker, StartError> {
        let port = settings.listen.port();
        let run = tokio::spawn(tasklatch_worker::run(settings));
        let worker = LiveWorker {
            port,
            run,
            http: reqwest::Client::new(),
        };
        let until = Instant::now() + READY_WITHIN;
        loop {
            if worker.run.is_finished() {
                return match worker.run.await {
                    Ok(Err(e)) => Err(e),
                    Ok(Ok(())) => panic!("the worker stopped at start without an error"),
                    Err(e) => panic!("the worker's task failed: {e}"),
                };
            }
            if let Some((200, _)) = worker.try_get("/readyz").await {
                return Ok(worker);
            }
            assert!(Instant::now() < until, "the worker was not ready in time");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// `GET path` (no credentials, or `token`): the status and the body.
    pub async fn get(&self, path: &str, token: Option<&str>) -> (u16, String) {
        let mut req = self
            .http
            .get(format!("http://127.0.0.1:{}{path}", self.port));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let res = req
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {path}: {e}"));
        let status = res.status().as_u16();
        (status, res.text().await.unwrap_or_default())
    }

    async fn try_get(&self, path: &str) -> Option<(u16, String)> {
        let url = format!("http://127.0.0.1:{}{path}", self.port);
        let res = self.http.get(url).send().await.ok()?;
        let status = res.status().as_u16();
        Some((status, res.text().await.unwrap_or_default()))
    }

    /// Stops the worker abruptly (its task is aborted: the lanes, the API and the listener
    /// with it) and waits until it is gone.
    pub async fn kill(self) {
        self.run.abort();
        let _ = self.run.await;
    }
}

/// An Agent Server double on `listener`: every request is answered `200` with `body` (for
/// the assistant check by graph name: `[]` means "no such assistant", a non-empty list means
/// found), then the connection is closed. Runs on its own thread until the process ends.
pub fn agent_server_double(listener: TcpListener, body: &'static str) {
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut buf = [0u8; 8192];
            let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
            let _ = stream.read(&mut buf);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
}

/// The double's answer when the assistant exists.
pub const ASSISTANT_FOUND: &str = r#"[{"assistant_id":"00000000-0000-4000-8000-000000000000"}]"#;
/// The double's answer when it does not.
pub const ASSISTANT_MISSING: &str = "[]";

/// A port nothing listens on (bound and released).
pub fn free_port() -> u16 {
    tasklatch_peers::free_port().unwrap_or_else(|e| panic!("{e}"))
}
