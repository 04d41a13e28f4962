//! The worker's command line without the peers: it refuses a schema that is behind (naming
//! `tasklatch migrate`) and a bad configuration (naming the field), never printing a secret;
//! `worker hash-token`; and the operator views (`tasks list|show|cancel`, `dead-letters list|requeue`)
//! against a real Postgres, scoped to (owner, thread), without remote ids.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;
use tasklatch_core::ids::{OwnerId, TaskId, ThreadId, WorkerId};
use tasklatch_core::lease::LeaseKind;
use tasklatch_core::policy::Policy;
use tasklatch_core::secret::{RemoteHandle, Secret};
use tasklatch_core::snapshot::{validate, RemoteReport};
use tasklatch_core::store::{ClaimRequest, NotifyWrite, Store};
use tasklatch_core::task::Identity;
use tasklatch_core::time::Timestamp;
use tasklatch_core::transitions::outbox::NotifyAction;
use tasklatch_core::transitions::submit::new_row;
use tasklatch_pg::harness::TestDb;
use tasklatch_pg::PgStore;

const PASSWORD: &str = "PLANTED-CLI-DB-PASSWORD";
const REMOTE_ID: &str = "RT-PLANTED-CLI-REMOTE-ID";

fn tasklatch(args: &[&str], env: &[(&str, &str)], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tasklatch"))
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run tasklatch: {e}"));
    if let Some(text) = stdin {
        let _ = child.stdin.take().map(|mut s| s.write_all(text.as_bytes()));
    }
    drop(child.stdin.take());
    child.wait_with_output().unwrap_or_else(|e| panic!("{e}"))
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn config_file(name: &str, body: &str) -> PathBuf {
    let path =
        std::env::temp_dir().join(format!("tasklatch-cli-{}-{name}.toml", std::process::id()));
    std::fs::write(&path, body).unwrap_or_else(|e| panic!("{e}"));
    path
}

const CONFIG: &str = r#"
[database]
url = "env:CLI_DATABASE_URL"
[auth]
tokens = [{ owner = "alice", sha256 = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" }]
[servers.fix]
url = "http://127.0.0.1:9/mcp"
headers = { Authorization = "Bearer PLANTED-CLI-MCP-TOKEN" }
[agent_server]
base_url = "http://127.0.0.1:9"
assistant_id = "echo"
"#;

/// The test database's URL with a planted password (the local server trusts).
fn with_password(url: &str) -> String {
    url.replacen("://postgres@", &format!("://postgres:{PASSWORD}@"), 1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worker_refuses_a_schema_that_is_behind() {
    let db = TestDb::create().await;
    sqlx::query(
        "DELETE FROM _sqlx_migrations WHERE version = (SELECT max(version) FROM _sqlx_migrations)",
    )
    .execute(db.pool())
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let config = config_file("behind", CONFIG);
    let url = with_password(db.url());
    let path = config.to_str().unwrap_or_default();
    let (ok, _, err) = cli(&["worker", "--config", path], &[("CLI_DATABASE_URL", &url)]).await;
    assert!(!ok);
    let known = tasklatch_pg::MIGRATOR.iter().count();
    let behind = format!(
        "the database schema is behind this worker ({} of {known} migrations applied)",
        known - 1
    );
    assert!(err.contains(&behind), "{err}");
    assert!(err.contains("tasklatch migrate"), "{err}");
    assert!(!err.contains("PLANTED"), "{err}");
    let _ = std::fs::remove_file(config);
    db.cleanup().await;
}

#[test]
fn a_bad_configuration_is_refused_by_field_without_its_value() {
    let wrong = CONFIG.replace(
        "[auth]",
        "[loops]\nlanes = \"PLANTED-IN-A-WRONG-FIELD\"\n[auth]",
    );
    let config = config_file("wrong", &wrong);
    let args = ["worker", "--config", config.to_str().unwrap_or_default()];
    let (_, err) = text(&tasklatch(
        &args,
        &[("CLI_DATABASE_URL", "postgres://u:PLANTED-PW@h/db")],
        None,
    ));
    assert!(err.contains("error: config:"), "{err}");
    assert!(!err.contains("PLANTED"), "{err}");
    let (_, err) = text(&tasklatch(&args, &[], None));
    assert!(
        err.contains("CLI_DATABASE_URL is not set") || err.contains("lanes"),
        "{err}"
    );
    let _ = std::fs::remove_file(config);
    let (_, err) = text(&tasklatch(&["worker"], &[], None));
    assert!(err.contains("--config FILE is required"), "{err}");
}

#[test]
fn hash_token_prints_the_sha256_to_configure() {
    let (out, _) = text(&tasklatch(&["worker", "hash-token"], &[], Some("abc\n")));
    assert_eq!(
        out.trim(),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    let (out, _) = text(&tasklatch(&["worker", "hash-token", "--new"], &[], None));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert_eq!(lines[1], tasklatch_worker::token::hash_token(lines[0]));
}

/// Tasks in thread t1: alice's `done` (completed; its notification dead-lettered, thread
/// gone), `twin` and `other` (working), and bob's `twin` (working).
async fn seed(store: &PgStore) {
    let policy = Policy::default();
    let now = Timestamp::from_micros(1_700_000_000_000_000);
    let specs = [
        ("alice", "done", "completed"),
        ("alice", "twin", "working"),
        ("alice", "other", "working"),
        ("bob", "twin", "working"),
    ];
    for (i, (owner, name, status)) in specs.into_iter().enumerate() {
        let remote = format!("{REMOTE_ID}-{i}");
        let handle = RemoteHandle {
            remote_task_id: Secret::new(remote.clone()),
            driver_data: Secret::new("{}"),
        };
        let report = RemoteReport {
            task_id: remote.clone(),
            status: status.into(),
            result: Some(format!("echo of {remote}")),
            ..RemoteReport::default()
        };
        let first = validate(&report, &handle);
        let identity = Identity {
            task_id: TaskId::from(format!("tsk_cli_{i}")),
            owner: OwnerId::from(owner),
            thread: ThreadId::from("t1"),
            server: "fix".into(),
            name: name.into(),
            handle,
            created_at: now.plus(Duration::from_secs(i as u64)),
        };
        let row = new_row(identity, Some(first), now, &policy);
        store
            .insert_task(row)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let req = ClaimRequest {
        worker: WorkerId::from("cli-test"),
        now,
        lease_for: Duration::from_secs(60),
        limit: 10,
    };
    let claimed = store
        .claim(LeaseKind::Notify, req)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        claimed.len(),
        1,
        "only the completed task has something to say"
    );
    let c = &claimed[0];
    let gone = NotifyWrite {
        task_id: c.row.id().clone(),
        lease: c.lease.clone(),
        dispatch_version: c.row.outbox.dispatch_version,
        action: NotifyAction::ThreadGone,
    };
    let written = store
        .finish_notifications(vec![gone], now)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(written[0].is_ok(), "{written:?}");
}

async fn cli(args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let out = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        tasklatch(&args, &env, None)
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let (stdout, stderr) = text(&out);
    assert!(
        !stdout.contains(REMOTE_ID) && !stderr.contains(REMOTE_ID),
        "{stdout}{stderr}"
    );
    (out.status.success(), stdout, stderr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_views_are_scoped_and_show_no_remote_id() {
    let db = TestDb::create().await;
    seed(&PgStore::new(db.pool().clone(), Policy::default())).await;
    let url = db.url().to_owned();
    let scoped = |owner: &'static str, rest: &[&'static str]| -> Vec<String> {
        let mut args = vec![
            "tasks".to_owned(),
            rest[0].to_owned(),
            "--owner".into(),
            owner.into(),
            "--thread".into(),
            "t1".into(),
        ];
        args.extend(rest[1..].iter().map(|s| s.to_string()));
        args.extend(["--database-url".to_owned(), url.clone()]);
        args
    };
    let run = |args: Vec<String>| async move {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        cli(&refs, &[]).await
    };

    let (ok, out, _) = run(scoped("alice", &["list"])).await;
    assert!(ok, "{out}");
    for id in ["tsk_cli_0", "tsk_cli_1", "tsk_cli_2"] {
        assert!(out.contains(id), "{out}");
    }
    assert!(
        !out.contains("tsk_cli_3") && out.contains("3 of 3 tasks"),
        "{out}"
    );
    let (_, out, _) = run(scoped("bob", &["list"])).await;
    assert!(
        out.contains("tsk_cli_3") && out.contains("1 of 1 tasks"),
        "{out}"
    );

    let (ok, out, _) = run(scoped("alice", &["show", "--id", "tsk_cli_0"])).await;
    assert!(ok, "{out}");
    let detail: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(detail["result_preview"], "echo of [redacted]");
    assert_eq!(detail["notification_status"], "dead_letter");
    let (ok, out, _) = run(scoped("bob", &["show", "--id", "tsk_cli_0"])).await;
    assert!(!ok && out.contains("not found"), "{out}");

    let (_, out, _) = run(scoped("bob", &["cancel", "--id", "tsk_cli_1"])).await;
    assert_eq!(out.trim(), "not found in this owner's thread");
    let (_, out, _) = run(scoped("alice", &["cancel", "--name", "twin"])).await;
    assert_eq!(
        out.trim(),
        "tsk_cli_1: cancel requested",
        "bob's twin is not alice's"
    );
    let (_, out, _) = run(scoped("alice", &["cancel", "--id", "tsk_cli_1"])).await;
    assert_eq!(out.trim(), "tsk_cli_1: a cancel was already requested");

    let (ok, out, err) = cli(
        &["dead-letters", "list"],
        &[("TASKLATCH_DATABASE_URL", &url)],
    )
    .await;
    assert!(ok, "{err}");
    let line = out
        .lines()
        .find(|l| l.starts_with("tsk_cli_0"))
        .unwrap_or_else(|| panic!("{out}"));
    for part in ["notify", "thread_gone", "alice / t1"] {
        assert!(line.contains(part), "{line}");
    }
    assert!(out.contains("1 dead letters shown (4 tasks read)"), "{out}");

    let env = [("TASKLATCH_DATABASE_URL", url.as_str())];
    let (ok, out, err) = cli(&["dead-letters", "requeue", "--id", "tsk_cli_0"], &env).await;
    assert!(ok, "{out}{err}");
    assert!(
        out.starts_with("requeued tsk_cli_0: its latest event is due again as version"),
        "{out}"
    );
    let (_, out, _) = cli(&["dead-letters", "list"], &env).await;
    assert!(
        out.contains("0 dead letters shown"),
        "requeued, no longer dead: {out}"
    );
    let (ok, out, _) = cli(&["dead-letters", "requeue", "--id", "tsk_cli_0"], &env).await;
    assert!(
        !ok && out.contains("not dead-lettered; nothing changed"),
        "{out}"
    );
    let (ok, out, _) = cli(&["dead-letters", "requeue", "--id", "tsk_nope"], &env).await;
    assert!(!ok && out.contains("no such task"), "{out}");
    db.cleanup().await;
}

/// `tasklatch migrate` into a database that already holds a host application's own `tasks`
/// table and its own sqlx history: it succeeds, tasklatch lives in schema `tasklatch` with its
/// own history, and the application's table, rows and history are exactly as they were.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_into_an_apps_database_leaves_the_app_untouched() {
    let db = TestDb::create_empty().await;
    for statement in [
        "CREATE TABLE tasks (id bigint PRIMARY KEY, title text NOT NULL)",
        "INSERT INTO tasks VALUES (1, 'the app''s own task')",
        "CREATE TABLE _sqlx_migrations (version BIGINT PRIMARY KEY, description TEXT NOT NULL, \
         installed_on TIMESTAMPTZ NOT NULL DEFAULT now(), success BOOLEAN NOT NULL, \
         checksum BYTEA NOT NULL, execution_time BIGINT NOT NULL)",
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (1, 'app tasks', true, '\\x0102', 7)",
    ] {
        sqlx::query(statement)
            .execute(db.pool())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let app_state = || async {
        let tasks: Vec<(i64, String)> = sqlx::query_as("SELECT id, title FROM public.tasks")
            .fetch_all(db.pool())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let history: Vec<(i64, String, Vec<u8>, i64)> = sqlx::query_as(
            "SELECT version, description, checksum, execution_time FROM public._sqlx_migrations",
        )
        .fetch_all(db.pool())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        (tasks, history)
    };
    let before = app_state().await;

    let (ok, out, err) = cli(&["migrate", "--database-url", db.url()], &[]).await;
    assert!(ok, "{out}{err}");
    assert!(out.contains("migrated schema tasklatch"), "{out}");
    let applied: i64 = sqlx::query_scalar("SELECT count(*) FROM tasklatch._sqlx_migrations")
        .fetch_one(db.pool())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        usize::try_from(applied).unwrap_or_default(),
        tasklatch_pg::MIGRATOR.iter().count()
    );
    assert_eq!(
        app_state().await,
        before,
        "the app's table and history untouched"
    );

    // The operator views work on the installation (default schema).
    let (ok, out, err) = cli(
        &[
            "tasks",
            "list",
            "--owner",
            "alice",
            "--thread",
            "th-1",
            "--database-url",
            db.url(),
        ],
        &[],
    )
    .await;
    assert!(ok, "{out}{err}");
    db.cleanup().await;
}
