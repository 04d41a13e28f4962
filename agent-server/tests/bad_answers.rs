//! Answers a real Agent Server does not give, from a fake one: each maps to a defined outcome,
//! and every error is bounded and free of our secrets (the fake echoes our API key back in
//! its error pages to make sure).

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};
use support::fake::{Fake, Reply, Seen};
use tasklatch_agent_server::{AgentServerConfig, AgentServerLauncher, CheckError};
use tasklatch_core::ids::{RunId, ThreadId};
use tasklatch_core::policy::MAX_SHOWN_ERROR;
use tasklatch_core::ports::{LaunchOutcome, Launcher, RunRequest, RunStatus};

const API_KEY: &str = "sk-PLANTED-API-KEY-0461";
const THREAD: &str = "0badc0de-0000-4000-8000-00000000000a";
const RUN: &str = "0badc0de-0000-4000-8000-0000000000aa";
const TIMEOUT_MS: u64 = 500;
const LIMIT: usize = 64 * 1024;

/// Replies by route; anything unrouted is a 500 so a stray request shows.
#[derive(Clone)]
struct Routes {
    thread: Reply,
    list: Reply,
    create: Reply,
    status: Reply,
    assistants: Reply,
}

impl Default for Routes {
    fn default() -> Self {
        Routes {
            thread: Reply::json(
                200,
                &format!(r#"{{"thread_id":"{THREAD}","metadata":{{"owner":"alice"}}}}"#),
            ),
            list: Reply::json(200, "[]"),
            create: Reply::json(
                200,
                &format!(r#"{{"run_id":"{RUN}","thread_id":"{THREAD}","status":"pending"}}"#),
            ),
            status: Reply::json(200, &format!(r#"{{"run_id":"{RUN}","status":"running"}}"#)),
            assistants: Reply::json(200, r#"[{"assistant_id":"x"}]"#),
        }
    }
}

async fn fake(routes: Routes) -> Fake {
    Fake::start(Arc::new(move |seen: &Seen| {
        let thread = format!("/threads/{THREAD}");
        let runs = format!("{thread}/runs");
        match (seen.method.as_str(), seen.path.as_str()) {
            ("GET", p) if p == thread => routes.thread.clone(),
            ("GET", p) if p.starts_with(&format!("{runs}?")) => routes.list.clone(),
            ("POST", p) if p == runs => routes.create.clone(),
            ("GET", p) if p.starts_with(&format!("{runs}/")) => routes.status.clone(),
            ("POST", "/assistants/search") => routes.assistants.clone(),
            _ => Reply::json(500, r#"{"detail":"unrouted"}"#),
        }
    }))
    .await
}

fn launcher(fake: &Fake) -> AgentServerLauncher {
    let mut config = AgentServerConfig::new(&fake.base_url, "agent");
    config.headers.insert("x-api-key".into(), API_KEY.into());
    config.request_timeout_ms = TIMEOUT_MS;
    config.max_answer_bytes = LIMIT;
    AgentServerLauncher::new(&config).unwrap_or_else(|e| panic!("{e}"))
}

fn request() -> RunRequest {
    RunRequest {
        key: "task:tsk_z:1:0".into(),
        owner: "alice".into(),
        thread: THREAD.into(),
        prompt: "prompt".into(),
    }
}

/// An error page that echoes our key and rambles on.
fn echoing_page() -> String {
    format!(
        "<html><head><title>502 Bad Gateway</title></head><body>key={API_KEY}\n{}</body></html>",
        "<p>upstream exploded</p>".repeat(2_000)
    )
}

fn assert_clean(message: &str) {
    assert!(!message.contains(API_KEY), "secret in {message:?}");
    assert!(message.chars().count() <= MAX_SHOWN_ERROR, "{message:?}");
    assert!(!message.contains('\n'), "{message:?}");
}

fn failed(outcome: LaunchOutcome, expect: &str) -> String {
    match outcome {
        LaunchOutcome::Failed(message) => {
            assert_clean(&message);
            assert!(message.contains(expect), "{message:?} lacks {expect:?}");
            message
        }
        other => panic!("expected Failed({expect:?}), got {other:?}"),
    }
}

/// An outcome the engine waits out (DOMAIN §3: unreachable, timed out, 5xx, an unreadable
/// lookup), with a clean message naming `expect`.
fn unanswered(outcome: LaunchOutcome, expect: &str) -> String {
    match outcome {
        LaunchOutcome::Unavailable(message) => {
            assert_clean(&message);
            assert!(message.contains(expect), "{message:?} lacks {expect:?}");
            message
        }
        other => panic!("expected Unavailable({expect:?}), got {other:?}"),
    }
}

fn status_error(result: Result<RunStatus, String>, expect: &str) {
    match result {
        Err(message) => {
            assert_clean(&message);
            assert!(message.contains(expect), "{message:?} lacks {expect:?}");
        }
        Ok(status) => panic!("expected an error ({expect:?}), got {status:?}"),
    }
}

async fn launch_with(routes: Routes) -> (LaunchOutcome, Vec<Seen>) {
    let f = fake(routes).await;
    let outcome = launcher(&f).start_run(request()).await;
    (outcome, f.seen())
}

#[tokio::test]
async fn an_html_error_page_is_a_bounded_clean_failure() {
    let (outcome, seen) = launch_with(Routes {
        create: Reply::html(502, &echoing_page()),
        ..Routes::default()
    })
    .await;
    let message = unanswered(outcome, "HTTP 502");
    assert!(message.contains("[redacted]"), "{message:?}");
    assert!(seen
        .iter()
        .all(|s| s.headers.contains(&("x-api-key".into(), API_KEY.into()))));

    let (outcome, seen) = launch_with(Routes {
        list: Reply::html(500, &echoing_page()),
        ..Routes::default()
    })
    .await;
    unanswered(outcome, "run lookup: HTTP 500");
    assert!(
        seen.iter().all(|s| s.method == "GET"),
        "no create after a failed lookup"
    );
}

#[tokio::test]
async fn a_huge_body_is_refused_while_it_is_read() {
    let declared = Reply::json(200, &"x".repeat(LIMIT + 1));
    let streamed = Reply {
        stream_extra: Some(50 * LIMIT),
        ..Reply::json(200, "{\"run_id\":\"")
    };
    for reply in [declared, streamed] {
        let (outcome, _) = launch_with(Routes {
            create: reply.clone(),
            ..Routes::default()
        })
        .await;
        unanswered(outcome, &format!("larger than {LIMIT} bytes"));
        let f = fake(Routes {
            status: reply,
            ..Routes::default()
        })
        .await;
        let result = launcher(&f)
            .run_status(&THREAD.into(), &RunId(RUN.into()))
            .await;
        status_error(result, "larger than");
    }
}

#[tokio::test]
async fn a_success_without_a_valid_run_is_a_failure() {
    for (body, expect) in [
        (r#"{"status":"pending"}"#.to_owned(), "no valid run id"),
        (r#"{"run_id":"../../x"}"#.to_owned(), "no valid run id"),
        ("not json".to_owned(), "not JSON"),
        (
            format!(r#"{{"run_id":"{RUN}","thread_id":"0badc0de-0000-4000-8000-00000000000b"}}"#),
            "another thread",
        ),
    ] {
        let (outcome, _) = launch_with(Routes {
            create: Reply::json(200, &body),
            ..Routes::default()
        })
        .await;
        failed(outcome, expect);
    }
    let (outcome, _) = launch_with(Routes {
        list: Reply::json(200, r#"{"runs":[]}"#),
        ..Routes::default()
    })
    .await;
    unanswered(outcome, "not a list");
}

#[tokio::test]
async fn a_slow_answer_fails_within_the_timeout() {
    let slow = |reply: Reply| Reply {
        delay: Duration::from_secs(5),
        ..reply
    };
    for routes in [
        Routes {
            create: slow(Routes::default().create),
            ..Routes::default()
        },
        Routes {
            list: slow(Routes::default().list),
            ..Routes::default()
        },
    ] {
        let started = Instant::now();
        let (outcome, _) = launch_with(routes).await;
        let took = started.elapsed();
        unanswered(outcome, "within");
        assert!(
            took < Duration::from_millis(TIMEOUT_MS + 700),
            "a call must end within its timeout; took {took:?}"
        );
    }
    let f = fake(Routes {
        status: slow(Routes::default().status),
        ..Routes::default()
    })
    .await;
    let started = Instant::now();
    let result = launcher(&f)
        .run_status(&THREAD.into(), &RunId(RUN.into()))
        .await;
    status_error(result, "no answer within the request timeout");
    assert!(started.elapsed() < Duration::from_millis(TIMEOUT_MS + 700));
}

#[tokio::test]
async fn statuses_map_to_defined_outcomes() {
    let create = |status: u16, body: &str| Routes {
        create: Reply::json(status, body),
        ..Routes::default()
    };
    let (busy, _) = launch_with(create(
        409,
        r#"{"detail":"Thread is already running a task."}"#,
    ))
    .await;
    assert_eq!(busy, LaunchOutcome::Busy);
    let not_found = r#"{"detail":"Thread or assistant not found."}"#;
    let (gone, seen) = launch_with(create(404, not_found)).await;
    assert_eq!(gone, LaunchOutcome::ThreadGone);
    assert_eq!(
        seen.last().map(|s| s.path.as_str()),
        Some("/assistants/search")
    );
    let (no_assistant, _) = launch_with(Routes {
        assistants: Reply::json(200, "[]"),
        ..create(404, not_found)
    })
    .await;
    failed(no_assistant, "assistant");
    let (invalid, _) = launch_with(create(422, r#"{"detail":"Invalid thread ID"}"#)).await;
    failed(invalid, "HTTP 422: Invalid thread ID");
    let (unavailable, _) = launch_with(create(503, "")).await;
    unanswered(unavailable, "HTTP 503");
    let (moved, seen) = launch_with(Routes {
        create: Reply {
            location: Some("http://127.0.0.1:9/elsewhere".into()),
            ..Reply::json(307, "")
        },
        ..Routes::default()
    })
    .await;
    failed(moved, "HTTP 307");
    assert_eq!(seen.iter().filter(|s| s.method == "POST").count(), 1);
    let (listed_gone, seen) = launch_with(Routes {
        list: Reply::json(404, not_found),
        ..Routes::default()
    })
    .await;
    assert_eq!(listed_gone, LaunchOutcome::ThreadGone);
    assert!(seen.iter().all(|s| s.method == "GET"), "nothing created");
}

#[tokio::test]
async fn ids_the_server_cannot_hold_make_no_request() {
    let f = fake(Routes::default()).await;
    let l = launcher(&f);
    let odd = RunRequest {
        thread: ThreadId::from("../assistants/search?x="),
        ..request()
    };
    assert_eq!(l.start_run(odd).await, LaunchOutcome::ThreadGone);
    assert_eq!(
        l.run_status(&THREAD.into(), &RunId("run-1".into())).await,
        Ok(RunStatus::Missing)
    );
    assert!(f.seen().is_empty(), "{:?}", f.seen());
}

#[tokio::test]
async fn run_status_answers() {
    let status = |reply: Reply| Routes {
        status: reply,
        ..Routes::default()
    };
    let ask = |routes: Routes| async move {
        let f = fake(routes).await;
        let result = launcher(&f)
            .run_status(&THREAD.into(), &RunId(RUN.into()))
            .await;
        result
    };
    assert_eq!(ask(Routes::default()).await, Ok(RunStatus::Running));
    assert_eq!(
        ask(status(Reply::json(404, r#"{"detail":"Not Found"}"#))).await,
        Ok(RunStatus::Missing)
    );
    status_error(
        ask(status(Reply::json(
            200,
            &format!(r#"{{"run_id":"{RUN}","status":"queued"}}"#),
        )))
        .await,
        "no known status",
    );
    status_error(
        ask(status(Reply::json(
            200,
            r#"{"run_id":"0badc0de-0000-4000-8000-0000000000bb","status":"success"}"#,
        )))
        .await,
        "another run",
    );
    status_error(
        ask(status(Reply::html(500, &echoing_page()))).await,
        "HTTP 500",
    );
}

#[tokio::test]
async fn an_unreachable_server_is_waited_out_and_the_check_says_why() {
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
        l.local_addr().unwrap_or_else(|e| panic!("{e}")).port()
    };
    let mut config = AgentServerConfig::new(format!("http://127.0.0.1:{closed}"), "agent");
    config.headers.insert("x-api-key".into(), API_KEY.into());
    let l = AgentServerLauncher::new(&config).unwrap_or_else(|e| panic!("{e}"));
    unanswered(l.start_run(request()).await, "cannot connect");
    match l.check().await {
        Err(CheckError::Unavailable(m)) => assert_clean(&m),
        other => panic!("{other:?}"),
    }

    let f = fake(Routes {
        assistants: Reply::json(401, r#"{"detail":"bad key"}"#),
        ..Routes::default()
    })
    .await;
    assert_eq!(
        launcher(&f).check().await,
        Err(CheckError::Unauthorized(401))
    );
    let f = fake(Routes {
        assistants: Reply::html(500, &echoing_page()),
        ..Routes::default()
    })
    .await;
    match launcher(&f).check().await {
        Err(CheckError::Unavailable(m)) => assert_clean(&m.to_string()),
        other => panic!("{other:?}"),
    }
}
