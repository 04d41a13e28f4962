//! Stopping while a remote call hangs: the first SIGTERM lets the call in flight finish (the
//! worker stays up, not ready), a second signal exits at once with status 130.
//!
//! The MCP server here accepts connections and never answers (a fault a real server cannot be
//! made to produce on demand); the Agent Server double only answers the start-up assistant
//! check. The task row is inserted directly, due for a poll, so the worker's first pass starts
//! a call that hangs for the configured 20 s request timeout.

#[path = "worker_e2e/process.rs"]
mod process;

use process::Worker;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tasklatch_core::ids::{OwnerId, TaskId, ThreadId};
use tasklatch_core::policy::Policy;
use tasklatch_core::ports::Clock;
use tasklatch_core::secret::{RemoteHandle, Secret};
use tasklatch_core::store::Store;
use tasklatch_core::task::Identity;
use tasklatch_core::transitions::submit::new_row;
use tasklatch_peers::free_port;
use tasklatch_pg::harness::TestDb;
use tasklatch_pg::PgStore;
use tasklatch_worker::clock::SystemClock;

/// Accepts connections and holds them open without a word; counts them.
fn silent_server() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    let held: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            count.fetch_add(1, Ordering::SeqCst);
            held.lock().unwrap_or_else(|p| p.into_inner()).push(stream);
        }
    });
    (port, accepted)
}

/// Answers every request with `200 [{"assistant_id": …}]`: the assistant check passes.
fn assistant_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut buf = [0u8; 8192];
            let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
            let _ = stream.read(&mut buf);
            let body = r#"[{"assistant_id":"00000000-0000-4000-8000-000000000000"}]"#;
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

fn config(port: u16, mcp: u16, agent: u16) -> String {
    format!(
        r#"
[database]
url = "env:SIG_DATABASE_URL"
[loops]
tick_ms = 100
[engine]
min_lease_left_ms = 25000
[http]
listen = "127.0.0.1:{port}"
[auth]
tokens = [{{ owner = "alice", sha256 = "{hash}" }}]
[servers.fix]
url = "http://127.0.0.1:{mcp}/mcp"
protocol = "extension"
request_timeout_ms = 20000
[agent_server]
base_url = "http://127.0.0.1:{agent}"
assistant_id = "echo"
"#,
        hash = tasklatch_worker::token::hash_token("t")
    )
}

/// One task, due for a poll now, on the `fix` server.
async fn seed(store: &PgStore) {
    let now = SystemClock.now();
    let identity = Identity {
        task_id: TaskId::from("tsk_hanging"),
        owner: OwnerId::from("alice"),
        thread: ThreadId::from("t1"),
        server: "fix".into(),
        name: "hanging".into(),
        handle: RemoteHandle {
            remote_task_id: Secret::new("RT-SIGNALS-1"),
            driver_data: Secret::new(r#"{"protocol":"extension"}"#),
        },
        created_at: now,
    };
    let row = new_row(identity, None, now, &Policy::default());
    store
        .insert_task(row)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_signal_exits_at_once_while_a_call_hangs() {
    let db = TestDb::create().await;
    seed(&PgStore::new(db.pool().clone(), Policy::default())).await;
    let (mcp, accepted) = silent_server();
    let agent = assistant_server();
    let port = free_port().unwrap_or_else(|e| panic!("{e}"));
    let dir = std::env::temp_dir().join(format!("tasklatch-worker-signals-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let env = [("SIG_DATABASE_URL", db.url().to_owned())];
    let mut worker = Worker::new(
        "worker-signals",
        &dir,
        &config(port, mcp, agent),
        port,
        &env,
    );
    worker.start().await;

    let until = Instant::now() + Duration::from_secs(20);
    while accepted.load(Ordering::SeqCst) == 0 {
        assert!(
            Instant::now() < until,
            "the poll never reached the MCP server:\n{}",
            worker.log_tail()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await; // the request is on the wire
    worker.send_term();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        worker.running(),
        "the first SIGTERM must wait for the call in flight:\n{}",
        worker.log_tail()
    );
    let (status, ready) = worker
        .call(reqwest::Method::GET, "/readyz", None, None)
        .await;
    assert_eq!(status, 503, "a stopping worker is not ready: {ready}");

    let second = Instant::now();
    worker.send_term();
    let (took, status) = worker.wait_exit(second).await;
    assert_eq!(status.code(), Some(130), "{status}\n{}", worker.log_tail());
    assert!(
        took < Duration::from_secs(2),
        "the second signal took {took:?}"
    );
    assert!(
        worker.log().contains("second signal: exiting at once"),
        "{}",
        worker.log_tail()
    );
    db.cleanup().await;
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "first SIGTERM: still finishing the hanging call after 1 s; second: exit 130 in {took:?}"
    );
}
