//! The worker's command line without the peers: it refuses a schema that is behind (naming
//! `tasklatch migrate`) and a bad configuration (naming the field), never printing a secret;
//! `worker hash-token`; and the operator views (`tasks list|show|cancel`, `dead-letters list|requeue`)
//! against a real Postgres, scoped to (owner, thread), without remote ids; requeues of
//! notification and cancel dead letters, by id and in bulk.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Output, Stdio};
use std::time::Duration;
use tasklatch_core::ids::{OwnerId, TaskId, ThreadId, WorkerId};
use tasklatch_core::lease::LeaseKind;
use tasklatch_core::policy::Policy;
use tasklatch_core::ports::Clock;
use tasklatch_core::secret::{RemoteHandle, Secret};
use tasklatch_core::snapshot::{validate, RemoteReport};
use tasklatch_core::status::CancelStatus;
use tasklatch_core::store::{
    CancelOutcome, CancelTarget, CancelWrite, ClaimRequest, NotifyWrite, Scope, Store,
};
use tasklatch_core::task::{Identity, TaskRow};
use tasklatch_core::time::Timestamp;
use tasklatch_core::transitions::cancel::CancelAction;
use tasklatch_core::transitions::outbox::NotifyAction;
use tasklatch_core::transitions::submit::new_row;
use tasklatch_pg::harness::TestDb;
use tasklatch_pg::PgStore;
use tasklatch_worker::config::DATABASE_URL_ENV;

const PASSWORD: &str = "PLANTED-CLI-DB-PASSWORD";
const REMOTE_ID: &str = "RT-PLANTED-CLI-REMOTE-ID";

/// Runs the binary with `env` added to this process's environment, less
/// `$TASKLATCH_DATABASE_URL` unless `env` sets it.
fn tasklatch(args: &[&str], env: &[(&str, &str)], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tasklatch"))
        .args(args)
        .env_remove(DATABASE_URL_ENV)
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

/// A task of `owner` in thread t1 on `server`, first reported `status` at `at`; its remote id
/// holds [`REMOTE_ID`].
fn task_row(
    id: &str,
    owner: &str,
    server: &str,
    name: &str,
    status: &str,
    at: Timestamp,
) -> TaskRow {
    let remote = format!("{REMOTE_ID}-{id}");
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
        task_id: TaskId::from(id),
        owner: OwnerId::from(owner),
        thread: ThreadId::from("t1"),
        server: server.into(),
        name: name.into(),
        handle,
        created_at: at,
    };
    new_row(identity, Some(first), at, &Policy::default())
}

/// Tasks in thread t1: alice's `done` (completed; its notification dead-lettered, thread
/// gone), `twin` and `other` (working), and bob's `twin` (working).
async fn seed(store: &PgStore) {
    let now = Timestamp::from_micros(1_700_000_000_000_000);
    let specs = [
        ("alice", "done", "completed"),
        ("alice", "twin", "working"),
        ("alice", "other", "working"),
        ("bob", "twin", "working"),
    ];
    for (i, (owner, name, status)) in specs.into_iter().enumerate() {
        let at = now.plus(Duration::from_secs(i as u64));
        let row = task_row(&format!("tsk_cli_{i}"), owner, "fix", name, status, at);
        store
            .insert_task(row)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    thread_gone(store, now).await;
}

fn claim_req(now: Timestamp) -> ClaimRequest {
    ClaimRequest {
        worker: WorkerId::from("cli-test"),
        now,
        lease_for: Duration::from_secs(60),
        limit: 10,
    }
}

/// Dead-letters the one notification due at `now` (the thread is gone).
async fn thread_gone(store: &PgStore, now: Timestamp) {
    let claimed = store
        .claim(LeaseKind::Notify, claim_req(now))
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

/// Claims the cancel work due at `now` and applies `action` (of the task id) to each claimed
/// task; their ids.
async fn cancel_step(
    store: &PgStore,
    now: Timestamp,
    action: impl Fn(&str) -> CancelAction,
) -> Vec<String> {
    let claimed = store
        .claim(LeaseKind::Cancel, claim_req(now))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let writes = claimed
        .iter()
        .map(|c| CancelWrite {
            task_id: c.row.id().clone(),
            lease: c.lease.clone(),
            action: action(c.row.id().as_str()),
        })
        .collect();
    let written = store
        .finish_cancels(writes, now)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(written.iter().all(|w| w.is_ok()), "{written:?}");
    claimed.iter().map(|c| c.row.id().0.clone()).collect()
}

fn alice_t1() -> Scope {
    Scope {
        owner: OwnerId::from("alice"),
        thread: ThreadId::from("t1"),
    }
}

/// Alice's tasks in t1: `tsk_dl_0` (working on `fix`, its cancel dead-lettered: budget spent),
/// `tsk_dl_1` (working on `other`, its cancel dead-lettered: the server was unavailable for
/// `max_unavailable`), `tsk_dl_2` (completed on `fix`, its notification dead-lettered: thread
/// gone).
async fn seed_dead_letters(store: &PgStore) {
    let now = Timestamp::from_micros(1_700_000_000_000_000);
    let specs = [
        ("tsk_dl_0", "fix", "working"),
        ("tsk_dl_1", "other", "working"),
        ("tsk_dl_2", "fix", "completed"),
    ];
    for (id, server, status) in specs {
        let row = task_row(id, "alice", server, id, status, now);
        store
            .insert_task(row)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    thread_gone(store, now).await;
    for id in ["tsk_dl_0", "tsk_dl_1"] {
        let target = CancelTarget::Id(TaskId::from(id));
        let got = store
            .request_cancel(&alice_t1(), &target, now)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(got, CancelOutcome::Requested(_)), "{got:?}");
    }
    // tsk_dl_0's budget is spent; tsk_dl_1's server does not answer, then stays unreachable
    // for `max_unavailable`.
    let first = |id: &str| match id {
        "tsk_dl_0" => CancelAction::BudgetExhausted,
        _ => CancelAction::Unavailable("connection refused".into()),
    };
    assert_eq!(cancel_step(store, now, first).await.len(), 2);
    let later = now.plus(Policy::default().max_unavailable + Duration::from_secs(600));
    let down = |_: &str| CancelAction::Unavailable("connection refused".into());
    let got = cancel_step(store, later, down).await;
    assert_eq!(got, ["tsk_dl_1"], "tsk_dl_0 is dead-lettered already");
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
    internal_views(&url).await;
    searches(&url).await;

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
        out.starts_with(
            "requeued tsk_cli_0 notification: its latest event is due again as version"
        ),
        "{out}"
    );
    assert!(
        out.contains("tsk_cli_0 cancel: not dead-lettered; nothing changed"),
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

/// `tasks show --internal --owner OWNER --thread t1 --id ID`; asserts no remote id shows.
async fn show_internal(url: &str, owner: &str, id: &str) -> (bool, String, String) {
    let args = [
        "tasks",
        "show",
        "--internal",
        "--owner",
        owner,
        "--thread",
        "t1",
        "--id",
        id,
        "--database-url",
        url,
    ];
    let (ok, out, err) = cli(&args, &[]).await;
    assert!(!out.contains(REMOTE_ID), "a remote id: {out}");
    (ok, out, err)
}

/// `tasks show --internal`: the operational state, scoped like `show`, without a remote id.
async fn internal_views(url: &str) {
    let show = |owner: &'static str, id: &'static str| show_internal(url, owner, id);
    let json = |out: &str| -> serde_json::Value {
        serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"))
    };
    let (ok, out, err) = show("alice", "tsk_cli_0").await;
    assert!(ok, "{err}");
    let view = json(&out);
    assert_eq!(view["server"], "fix");
    assert_eq!(view["remote"]["status"], "completed");
    assert_eq!(view["notification"]["status"], "dead_letter");
    assert_eq!(view["notification"]["dead_letter"]["reason"], "thread_gone");
    assert!(view["poll"].get("next_poll_at").is_some(), "{view}");
    let (ok, out, err) = show("alice", "tsk_cli_1").await;
    assert!(ok, "{err}");
    let view = json(&out);
    assert_eq!(view["cancel"]["status"], "requested", "{view}");
    assert!(view["cancel"]["requested_at"].is_string(), "{view}");
    let (ok, out, _) = show("bob", "tsk_cli_0").await;
    assert!(!ok && out.contains("not found"), "{out}");
}

/// `tasks search`: across owners, each filter narrowing, the limit said, no remote id.
async fn searches(url: &str) {
    let search = |filters: &'static [&'static str]| async move {
        let mut args = vec!["tasks", "search", "--database-url", url];
        args.extend_from_slice(filters);
        let (ok, out, err) = cli(&args, &[]).await;
        assert!(ok, "{filters:?}: {err}");
        assert!(!out.contains(REMOTE_ID), "a remote id: {out}");
        let ids: Vec<String> = out
            .lines()
            .filter(|l| l.starts_with("tsk_"))
            .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
            .collect();
        (ids, out)
    };
    let (all, out) = search(&[]).await;
    assert_eq!(
        all,
        ["tsk_cli_0", "tsk_cli_1", "tsk_cli_2", "tsk_cli_3"],
        "{out}"
    );
    assert!(out.contains("4 tasks shown (4 tasks read)"), "{out}");
    assert_eq!(search(&["--owner", "bob"]).await.0, ["tsk_cli_3"]);
    assert_eq!(search(&["--status", "completed"]).await.0, ["tsk_cli_0"]);
    let dead = search(&["--notification", "dead_letter"]).await.0;
    assert_eq!(dead, ["tsk_cli_0"]);
    let (none, out) = search(&["--server", "elsewhere"]).await;
    assert!(none.is_empty() && out.contains("0 tasks shown"), "{out}");
    assert_eq!(search(&["--older-than", "1d"]).await.0.len(), 4);
    let (two, out) = search(&["--limit", "2"]).await;
    assert_eq!(two.len(), 2);
    assert!(out.contains("limit reached"), "{out}");
    let (ok, _, err) = cli(
        &["tasks", "search", "--status", "done", "--database-url", url],
        &[],
    )
    .await;
    assert!(
        !ok && err.contains("expected one of submitted, working"),
        "{err}"
    );
}

/// The cancel row of alice's task `id`.
async fn cancel_of(store: &PgStore, id: &str) -> tasklatch_core::task::CancelState {
    let row = store
        .get_task(&alice_t1(), &TaskId::from(id))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("{id} exists"));
    row.cancel
}

/// `tasks show`'s `cancel_status` of alice's task `id`.
async fn shown_cancel_status(url: &str, id: &str) -> serde_json::Value {
    let args = [
        "tasks", "show", "--owner", "alice", "--thread", "t1", "--id", id,
    ];
    let (ok, out, err) = cli(&args, &[("TASKLATCH_DATABASE_URL", url)]).await;
    assert!(ok, "{out}{err}");
    let detail: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    detail["cancel_status"].clone()
}

/// `tasklatch dead-letters ARGS…` on the database at `url`.
async fn dl(url: &str, args: &[&str]) -> (bool, String, String) {
    let mut all = vec!["dead-letters"];
    all.extend_from_slice(args);
    cli(&all, &[("TASKLATCH_DATABASE_URL", url)]).await
}

/// `dead-letters list` gives each dead letter its kind and reason; the detail shows the failed
/// cancel.
async fn listed_with_reasons(url: &str) {
    let (ok, out, err) = dl(url, &["list"]).await;
    assert!(ok, "{err}");
    for (id, parts) in [
        ("tsk_dl_0", ["cancel", "budget"]),
        ("tsk_dl_1", ["cancel", "unavailable"]),
        ("tsk_dl_2", ["notify", "thread_gone"]),
    ] {
        let line = line_of_in(&out, id);
        assert!(parts.iter().all(|p| line.contains(p)), "{line}");
    }
    assert!(out.contains("3 dead letters shown (3 tasks read)"), "{out}");
    assert_eq!(shown_cancel_status(url, "tsk_dl_0").await, "failed");
    assert_eq!(
        shown_cancel_status(url, "tsk_dl_2").await,
        serde_json::Value::Null
    );
}

/// A bad reason, a missing or doubled target, no terminal to confirm on, filters that match
/// nothing: refused or nothing done, and the dead letters stay.
async fn bad_requeues_change_nothing(store: &PgStore, url: &str) {
    let (ok, _, err) = dl(url, &["requeue", "--all", "--reason", "bogus"]).await;
    assert!(!ok, "{err}");
    assert!(
        err.contains("not a dead-letter reason; expected one of thread_gone, budget, unavailable"),
        "{err}"
    );
    let (ok, _, err) = dl(url, &["requeue"]).await;
    assert!(
        !ok && err.contains("--id") && err.contains("--all"),
        "{err}"
    );
    let (ok, _, err) = dl(url, &["requeue", "--all", "--id", "tsk_dl_0"]).await;
    assert!(!ok && err.contains("cannot be used with"), "{err}");

    // Without --yes and without a terminal to ask on: refused, nothing changed.
    let (ok, out, err) = dl(url, &["requeue", "--all"]).await;
    assert!(!ok, "{out}{err}");
    assert!(
        out.contains("3 dead letters match (1 notifications, 2 cancels"),
        "{out}"
    );
    assert!(
        err.contains("stdin is not a terminal") && err.contains("--yes"),
        "{err}"
    );
    // The filters hold together: no budget cancel on `other`.
    let none = [
        "requeue", "--all", "--kind", "cancel", "--reason", "budget", "--server", "other", "--yes",
    ];
    let (ok, out, _) = dl(url, &none).await;
    assert!(!ok && out.contains("0 dead letters match"), "{out}");
    for id in ["tsk_dl_0", "tsk_dl_1"] {
        let status = cancel_of(store, id).await.status;
        assert_eq!(status, CancelStatus::DeadLetter, "{id}");
    }
}

/// `requeue --all --kind cancel --yes` requeues both cancels (due now, fresh budget) and
/// leaves the notification dead letter; a second run finds nothing.
async fn cancels_requeued_in_bulk(store: &PgStore, url: &str) {
    let all_cancels = ["requeue", "--all", "--kind", "cancel", "--yes"];
    let before = tasklatch_worker::clock::SystemClock.now();
    let (ok, out, err) = dl(url, &all_cancels).await;
    let after = tasklatch_worker::clock::SystemClock.now();
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("2 dead letters match (0 notifications, 2 cancels"),
        "{out}"
    );
    assert!(
        out.contains("requeued 2 (0 notifications, 2 cancels); skipped 0"),
        "{out}"
    );
    for id in ["tsk_dl_0", "tsk_dl_1"] {
        let cancel = cancel_of(store, id).await;
        assert_eq!(cancel.status, CancelStatus::Requested, "{id}");
        assert_eq!(
            (cancel.failures, cancel.unavailable_since),
            (0, None),
            "{id}"
        );
        let due = cancel.due_at.unwrap_or_else(|| panic!("{id}: not due"));
        assert!(before <= due && due <= after, "{id}: due at {due:?}");
    }
    assert_eq!(shown_cancel_status(url, "tsk_dl_0").await, "requested");
    let (_, out, _) = dl(url, &["list"]).await;
    assert!(
        line_of_in(&out, "tsk_dl_2").contains("thread_gone")
            && out.contains("1 dead letters shown"),
        "--kind cancel left the notification: {out}"
    );
    let (ok, out, _) = dl(url, &all_cancels).await;
    assert!(!ok && out.contains("0 dead letters match"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letters_of_both_kinds_are_listed_and_requeued() {
    let db = TestDb::create().await;
    let store = PgStore::new(db.pool().clone(), Policy::default());
    seed_dead_letters(&store).await;
    let url = db.url();
    listed_with_reasons(url).await;
    bad_requeues_change_nothing(&store, url).await;
    cancels_requeued_in_bulk(&store, url).await;

    let (ok, out, err) = dl(url, &["requeue", "--id", "tsk_dl_2"]).await;
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("requeued tsk_dl_2 notification: its latest event is due again"),
        "{out}"
    );
    assert!(
        out.contains("tsk_dl_2 cancel: not dead-lettered; nothing changed"),
        "{out}"
    );
    let (_, out, _) = dl(url, &["list"]).await;
    assert!(out.contains("0 dead letters shown"), "{out}");
    db.cleanup().await;
}

fn line_of_in(out: &str, id: &str) -> String {
    out.lines()
        .find(|l| l.starts_with(id))
        .unwrap_or_else(|| panic!("{id}: {out}"))
        .to_owned()
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

/// A task of `server` whose polls failed and backed off an hour, at the wall clock's now.
fn backed_off_row(id: &str, server: &str) -> TaskRow {
    let now = tasklatch_worker::clock::SystemClock.now();
    let mut row = task_row(id, "alice", server, id, "working", now);
    row.poll.consecutive_errors = 7;
    row.poll.last_error = Some(tasklatch_core::remote::PollError {
        class: tasklatch_core::remote::ErrorClass::Connection,
        message: "connection refused".into(),
    });
    row.poll.next_poll_at = Some(now.plus(Duration::from_secs(3_600)));
    row
}

async fn next_poll_in(store: &PgStore, id: &str) -> Duration {
    let rows = store
        .admin_rows(None, 100)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let row = rows.iter().find(|r| r.id().as_str() == id).expect("row");
    let next = row.poll.next_poll_at.expect("pollable");
    next.since(tasklatch_worker::clock::SystemClock.now())
}

/// `tasks poll-now` brings one server's backed-off polls forward (or every server's), and
/// refuses to guess which server is meant.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn poll_now_brings_a_servers_backed_off_polls_forward() {
    let db = TestDb::create().await;
    let store = PgStore::new(db.pool().clone(), Policy::default());
    for (id, server) in [("tsk_pn_0", "fix"), ("tsk_pn_1", "other")] {
        store
            .insert_task(backed_off_row(id, server))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let url = db.url();
    let poll_now = |args: &'static [&'static str]| {
        let mut all = vec!["tasks", "poll-now", "--database-url", url];
        all.extend_from_slice(args);
        async move { cli(&all, &[]).await }
    };
    let (ok, _, err) = poll_now(&[]).await;
    assert!(!ok && err.contains("--server"), "{err}");
    let (ok, out, err) = poll_now(&["--server", "fix", "--backed-off-only"]).await;
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("1 backed-off tasks of server fix are due again"),
        "{out}"
    );
    assert!(next_poll_in(&store, "tsk_pn_0").await < Duration::from_secs(5));
    assert!(next_poll_in(&store, "tsk_pn_1").await > Duration::from_secs(3_000));
    let (ok, out, err) = poll_now(&["--all-servers", "--spacing-ms", "10"]).await;
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("1 tasks of every server are due again"),
        "{out}"
    );
    assert!(next_poll_in(&store, "tsk_pn_1").await < Duration::from_secs(5));
    db.cleanup().await;
}

/// `tasklatch migrate` takes the database from `$TASKLATCH_DATABASE_URL` when `--database-url`
/// is not given (so no password on the command line), says so in `--help`, and names both when
/// neither is given.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_takes_the_database_from_the_environment() {
    let (ok, out, err) = cli(&["migrate", "--help"], &[]).await;
    assert!(ok && out.contains("$TASKLATCH_DATABASE_URL"), "{out}{err}");
    let (ok, out, err) = cli(&["migrate"], &[]).await;
    assert!(!ok, "{out}{err}");
    assert!(
        err.contains("give --database-url or $TASKLATCH_DATABASE_URL"),
        "{err}"
    );

    let db = TestDb::create_empty().await;
    let url = with_password(db.url());
    let (ok, out, err) = cli(&["migrate"], &[(DATABASE_URL_ENV, &url)]).await;
    assert!(ok, "{out}{err}");
    assert!(out.contains("migrated schema tasklatch"), "{out}");
    assert!(
        !out.contains("PLANTED") && !err.contains("PLANTED"),
        "{out}{err}"
    );
    let applied: i64 = sqlx::query_scalar("SELECT count(*) FROM tasklatch._sqlx_migrations")
        .fetch_one(db.pool())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        usize::try_from(applied).unwrap_or_default(),
        tasklatch_pg::MIGRATOR.iter().count()
    );
    db.cleanup().await;
}

/// Tasks of a listing too long for one pipe buffer: 100 completed tasks of alice in thread
/// [`long_thread`], each named 200 four-byte characters, their notifications dead-lettered
/// (thread gone). `tasks list` prints about 88 KB of them, `dead-letters list` as much.
async fn seed_long_listing(store: &PgStore) {
    let now = Timestamp::from_micros(1_700_000_000_000_000);
    let name = "\u{1d539}".repeat(200);
    for i in 0..100 {
        let mut row = task_row(
            &format!("tsk_pipe_{i}"),
            "alice",
            "fix",
            &name,
            "completed",
            now,
        );
        row.identity.thread = ThreadId::from(long_thread());
        store
            .insert_task(row)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let claim = ClaimRequest {
        limit: 100,
        ..claim_req(now)
    };
    let claimed = store
        .claim(LeaseKind::Notify, claim)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        claimed.len(),
        100,
        "every completed task has something to say"
    );
    let gone = claimed
        .iter()
        .map(|c| NotifyWrite {
            task_id: c.row.id().clone(),
            lease: c.lease.clone(),
            dispatch_version: c.row.outbox.dispatch_version,
            action: NotifyAction::ThreadGone,
        })
        .collect();
    let written = store
        .finish_notifications(gone, now)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(written.iter().all(|w| w.is_ok()), "{written:?}");
}

/// A thread id of 200 four-byte characters.
fn long_thread() -> String {
    "\u{1d538}".repeat(200)
}

/// Runs `tasklatch ARGS…` with stdout a pipe whose reader reads one line and then closes it
/// (as `| head -1` does); the exit status and stderr.
fn read_one_line_then_close(args: &[String], url: &str) -> (ExitStatus, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tasklatch"))
        .args(args)
        .env(DATABASE_URL_ENV, url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run tasklatch: {e}"));
    let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
    let mut first = String::new();
    let mut reader = BufReader::new(stdout);
    reader
        .read_line(&mut first)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(first.starts_with("TASK"), "{first}");
    drop(reader);
    let out = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `tasks list | head -1` and `dead-letters list | head -1`: when the reader closes the pipe
/// before the listing is written, the command stops quietly with exit code 0 (no panic, no
/// "Broken pipe").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listings_stop_quietly_when_the_reader_closes_the_pipe() {
    let db = TestDb::create().await;
    seed_long_listing(&PgStore::new(db.pool().clone(), Policy::default())).await;
    let thread = long_thread();
    let listings = [
        vec!["dead-letters", "list"],
        vec![
            "tasks", "list", "--owner", "alice", "--thread", &thread, "--limit", "100",
        ],
    ];
    for args in listings {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let url = db.url().to_owned();
        let shown = args.join(" ");
        let (status, err) =
            tokio::task::spawn_blocking(move || read_one_line_then_close(&args, &url))
                .await
                .unwrap_or_else(|e| panic!("{e}"));
        assert!(status.success(), "{shown}: {status}: {err}");
        assert!(
            !err.contains("panicked") && !err.contains("Broken pipe"),
            "{shown}: {err}"
        );
    }
    db.cleanup().await;
}

/// A port on 127.0.0.1 that nothing listens on (bound, then released).
fn closed_port() -> u16 {
    let listener =
        std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("bind: {e}"));
    listener
        .local_addr()
        .unwrap_or_else(|e| panic!("{e}"))
        .port()
}

/// A worker and an operator command pointed at a port nothing listens on fail with the server
/// (`127.0.0.1:<port>`) and the cause (refused), never the password or the URL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_database_is_named_with_the_cause() {
    let port = closed_port();
    let url = format!("postgres://postgres:{PASSWORD}@127.0.0.1:{port}/test");
    let at = format!("127.0.0.1:{port}");
    let quick = CONFIG.replace("[database]\n", "[database]\nconnect_timeout_ms = 300\n");
    let config = config_file("refused", &quick);
    let path = config.to_str().unwrap_or_default();
    let worker = cli(&["worker", "--config", path], &[("CLI_DATABASE_URL", &url)]).await;
    let operator = cli(&["dead-letters", "list"], &[(DATABASE_URL_ENV, &url)]).await;
    for (ok, out, err) in [worker, operator] {
        assert!(!ok, "{out}{err}");
        assert!(
            err.contains(&format!("could not connect to the database at {at}: ")),
            "{err}"
        );
        assert!(err.contains("refused"), "{err}");
        assert!(
            !err.contains("PLANTED") && !err.contains("postgres://"),
            "{err}"
        );
    }
    let _ = std::fs::remove_file(config);
}

/// `--database-hosts`: `tasklatch migrate` and an operator command skip a host that refuses and
/// use the one that takes writes (the URL's own server, listed second); with only the refusing
/// host they fail naming the host list and what each host answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_and_operator_commands_find_the_primary_in_a_host_list() {
    let db = TestDb::create().await;
    let url = db.url().to_owned();
    let options: sqlx::postgres::PgConnectOptions = url.parse().unwrap_or_else(|e| panic!("{e}"));
    let (closed, server) = (
        format!("127.0.0.1:{}", closed_port()),
        format!("{}:{}", options.get_host(), options.get_port()),
    );
    let hosts = format!("{closed},{server}");
    let migrate = [
        "migrate",
        "--database-url",
        &url,
        "--database-hosts",
        &hosts,
    ];
    let (ok, out, err) = cli(&migrate, &[]).await;
    assert!(
        ok && out.contains("migrated schema tasklatch"),
        "{out}{err}"
    );
    let list = [
        "dead-letters",
        "list",
        "--database-url",
        &url,
        "--database-hosts",
        &hosts,
    ];
    let (ok, out, err) = cli(&list, &[]).await;
    assert!(ok, "{out}{err}");
    let only_closed = [
        "dead-letters",
        "list",
        "--database-url",
        &url,
        "--database-hosts",
        &closed,
    ];
    let (ok, out, err) = cli(&only_closed, &[]).await;
    assert!(!ok, "{out}{err}");
    let named =
        format!("could not connect to the database at {closed}: no primary among {closed}: ");
    assert!(err.contains(&named) && err.contains("refused"), "{err}");
    db.cleanup().await;
}
