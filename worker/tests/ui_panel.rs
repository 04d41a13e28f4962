//! The background-task panel (`/ui`) over HTTP on a loopback port, against a real Postgres:
//! the engine on the Postgres store (so the store's trigger sends the thread-change
//! notifications), a remote-server double whose handles hold planted secrets, threads owned
//! `<owner>-…`, and the worker's listener publishing to the panel. Covers the token exchange
//! and its cookie, the 401 sign-in form, the page with its CSP and escaping, another owner's
//! 404s, CSRF on cancel and answer, ETag/304, and the push stream; and a whole worker started
//! with `[ui]` on, whose one listener feeds the panel's stream.

#[path = "support/live.rs"]
mod live;
mod support;

use serde_json::Value;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{app_state, bearer, report, serve, IdleLauncher, PlantedDriver, PrefixOwners};
use tasklatch_core::engine::Engine;
use tasklatch_core::ids::{OwnerId, ThreadId, WorkerId};
use tasklatch_core::policy::Policy;
use tasklatch_core::ports::DriverError;
use tasklatch_core::snapshot::RemoteReport;
use tasklatch_pg::harness::TestDb;
use tasklatch_pg::PgStore;
use tasklatch_worker::api::router;
use tasklatch_worker::clock::SystemClock;
use tasklatch_worker::config::Ui;
use tasklatch_worker::metrics::Metrics;
use tasklatch_worker::ui::changes::{thread_key, Change, ThreadChanges, CHANNEL};
use tasklatch_worker::ui::Panel;
use tasklatch_worker::wakeup::{listen_for, ListenTarget, Subscribers};
use tokio::sync::watch;

const SECRET: &str = "RT-PLANTED-PANEL-SECRET";
const HOSTILE_NAME: &str = r#"<script>alert("name")</script>"#;
const HOSTILE_RESULT: &str = r#"<img src=x onerror='alert(1)'> "done""#;
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
                   img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// Tool `done` completes with [`HOSTILE_RESULT`], tool `ask` asks `[q1]`, anything else is
/// `working`.
fn first_report(tool: &str, id: &str) -> Result<RemoteReport, DriverError> {
    let mut first = report(id, "working");
    match tool {
        "done" => {
            first.status = "completed".into();
            first.result = Some(HOSTILE_RESULT.into());
        }
        "ask" => {
            first.status = "input_required".into();
            first.input_request = Some("[q1] Which colour?".into());
        }
        _ => {}
    }
    Ok(first)
}

/// A worker's API with the panel on a loopback port, its database, and the stop signal.
struct Harness {
    addr: SocketAddr,
    http: reqwest::Client,
    db: TestDb,
    stop: watch::Sender<bool>,
}

/// An HTTP answer read whole.
struct Answer {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> String {
        let v = self.headers.get(name).and_then(|v| v.to_str().ok());
        v.unwrap_or_default().to_owned()
    }
}

impl Harness {
    async fn start() -> Harness {
        let db = TestDb::create().await;
        let pool = db.pool().clone();
        let engine = Engine::new(
            PgStore::new(pool.clone(), Policy::default()),
            PlantedDriver::new(SECRET, first_report),
            IdleLauncher,
            SystemClock,
            WorkerId::from("panel-test-0"),
            Policy::default(),
        );
        let auth = bearer(&[("tok-alice", "alice"), ("tok-bob", "bob")]);
        let mut state = app_state(
            Arc::new(engine),
            1,
            auth,
            &["fix"],
            Arc::new(PrefixOwners),
            pool,
        );
        let (stop, stop_rx) = watch::channel(false);
        let changes = ThreadChanges::default();
        let ui = Ui {
            frame_ancestors: "'none'".into(),
            secure_cookie: true,
            session_ttl: Duration::from_secs(600),
        };
        state.ui = Some(Arc::new(Panel::new(ui, changes.clone(), stop_rx.clone())));
        let options = db.url().parse().unwrap_or_else(|e| panic!("{e}"));
        let to = Subscribers {
            lanes: None,
            threads: Some(changes),
        };
        let target = ListenTarget::Fixed(Box::new(options));
        let mut connected = to.threads.as_ref().map(ThreadChanges::subscribe);
        tokio::spawn(listen_for(target, to, Arc::new(Metrics::new()), stop_rx));
        // The listener says "anything may have changed" once it listens.
        if let Some(rx) = connected.as_mut() {
            let first = tokio::time::timeout(Duration::from_secs(10), rx.recv()).await;
            assert!(matches!(first, Ok(Ok(Change::All))), "{first:?}");
        }
        let addr = serve(router(state, 64 << 10, 64)).await;
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        Harness {
            addr,
            http,
            db,
            stop,
        }
    }

    /// `method path` as `with` says (a body starting with `{` is JSON, any other a form).
    async fn req(&self, method: &str, path: &str, with: With<'_>) -> Answer {
        let method = reqwest::Method::from_bytes(method.as_bytes());
        let method = method.unwrap_or_else(|e| panic!("{e}"));
        let mut req = self
            .http
            .request(method, format!("http://{}{path}", self.addr));
        if let Some(c) = with.cookie {
            req = req.header("cookie", format!("tasklatch_ui={c}"));
        }
        if let Some(t) = with.token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        if let Some(b) = with.body {
            let json = b.starts_with('{');
            let kind = if json {
                "application/json"
            } else {
                "application/x-www-form-urlencoded"
            };
            req = req.header("content-type", kind).body(b.to_owned());
        }
        if let Some((k, v)) = with.header {
            req = req.header(k, v);
        }
        let res = req.send().await.unwrap_or_else(|e| panic!("{path}: {e}"));
        let (status, headers) = (res.status().as_u16(), res.headers().clone());
        let body = res.text().await.unwrap_or_default();
        Answer {
            status,
            headers,
            body,
        }
    }

    /// Signs in with `token`: the session cookie's value.
    async fn sign_in(&self, token: &str) -> String {
        let body = format!("token={token}");
        let with = With {
            body: Some(&body),
            ..With::default()
        };
        let a = self.req("POST", "/ui/session", with).await;
        assert_eq!(a.status, 204, "{}", a.body);
        let set = a.header("set-cookie");
        let value = set
            .strip_prefix("tasklatch_ui=")
            .and_then(|c| c.split(';').next());
        value
            .unwrap_or_else(|| panic!("no session cookie: {set}"))
            .to_owned()
    }

    /// Submits a task through the API as `token`: its id.
    async fn submit(&self, token: &str, thread: &str, tool: &str, name: &str) -> String {
        let body = serde_json::json!({"server": "fix", "tool": tool, "name": name}).to_string();
        let with = With {
            token: Some(token),
            body: Some(&body),
            ..With::default()
        };
        let a = self
            .req("POST", &format!("/v1/threads/{thread}/tasks"), with)
            .await;
        assert_eq!(a.status, 201, "{}", a.body);
        let v: Value = serde_json::from_str(&a.body).unwrap_or_else(|e| panic!("{e}"));
        v["task_id"]
            .as_str()
            .unwrap_or_else(|| panic!("{v}"))
            .to_owned()
    }

    /// The page of `thread` for session `c`: asserts 200 and no planted secret.
    async fn page(&self, c: &str, thread: &str) -> Answer {
        let a = self
            .req("GET", &format!("/ui/threads/{thread}"), cookie(c))
            .await;
        assert_eq!(a.status, 200, "{}", a.body);
        assert!(!a.body.contains(SECRET), "a secret leaked: {}", a.body);
        a
    }

    /// The JSON detail of `task` in `thread` for session `c`.
    async fn detail(&self, c: &str, thread: &str, task: &str) -> Answer {
        let path = format!("/ui/threads/{thread}/tasks/{task}");
        self.req("GET", &path, cookie(c)).await
    }
}

/// The CSRF token the page's forms carry.
fn csrf_of(page: &str) -> String {
    let at = page
        .find("name=\"csrf\" value=\"")
        .unwrap_or_else(|| panic!("no form: {page}"));
    let rest = &page[at + "name=\"csrf\" value=\"".len()..];
    rest.split('"').next().unwrap_or_default().to_owned()
}

/// A request's options beyond method and path.
#[derive(Default, Clone, Copy)]
struct With<'a> {
    cookie: Option<&'a str>,
    token: Option<&'a str>,
    body: Option<&'a str>,
    header: Option<(&'a str, &'a str)>,
}

/// Only the session `cookie`.
fn cookie(c: &str) -> With<'_> {
    With {
        cookie: Some(c),
        ..With::default()
    }
}

/// The session `cookie` and a form `body`.
fn form<'a>(c: &'a str, body: &'a str) -> With<'a> {
    With {
        body: Some(body),
        ..cookie(c)
    }
}

/// A request a browser marks as coming from another site.
const CROSS_SITE: (&str, &str) = ("sec-fetch-site", "cross-site");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_exchange_sets_a_strict_cookie_and_a_page_without_one_is_401() {
    let h = Harness::start().await;
    let a = h.req("GET", "/ui/threads/alice-1", With::default()).await;
    assert_eq!(a.status, 401);
    assert!(a.body.contains("action=\"/ui/session\""), "{}", a.body);
    assert!(
        a.body.contains("value=\"/ui/threads/alice-1\""),
        "comes back"
    );
    assert_eq!(a.header("content-security-policy"), CSP);
    // A bearer token on a page request is no session: pages take the cookie only.
    let bearer = With {
        token: Some("tok-alice"),
        ..With::default()
    };
    assert_eq!(
        h.req("GET", "/ui/threads/alice-1", bearer).await.status,
        401
    );

    let wrong = With {
        body: Some("token=wrong&next=/ui/threads/alice-1"),
        ..With::default()
    };
    let a = h.req("POST", "/ui/session", wrong).await;
    assert_eq!(a.status, 401);
    assert!(a.header("set-cookie").is_empty());
    let right = With {
        body: Some("token=tok-alice&next=/ui/threads/alice-1"),
        ..With::default()
    };
    let a = h.req("POST", "/ui/session", right).await;
    assert_eq!(a.status, 303);
    assert_eq!(a.header("location"), "/ui/threads/alice-1");
    let set = a.header("set-cookie");
    for part in [
        "HttpOnly",
        "SameSite=Strict",
        "Secure",
        "Path=/ui",
        "Max-Age=600",
    ] {
        assert!(set.split("; ").any(|p| p == part), "{part} missing: {set}");
    }
    assert!(!set.contains("tok-alice"));
    // The Authorization header works as well; a request from another site does not.
    assert_eq!(h.req("POST", "/ui/session", bearer).await.status, 204);
    let cross = With {
        header: Some(CROSS_SITE),
        ..bearer
    };
    assert_eq!(h.req("POST", "/ui/session", cross).await.status, 403);
    h.db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_and_assets_carry_the_security_headers() {
    let h = Harness::start().await;
    let session = h.sign_in("tok-alice").await;
    let page = h.page(&session, "alice-1").await;
    assert_eq!(page.header("content-security-policy"), CSP);
    assert_eq!(page.header("cache-control"), "no-store");
    assert_eq!(page.header("x-content-type-options"), "nosniff");
    assert_eq!(page.header("referrer-policy"), "no-referrer");
    assert!(!page.body.contains("style=") && !page.body.contains("onclick"));
    assert!(page.body.contains("src=\"/ui/assets/panel.js\""));
    let js = h.req("GET", "/ui/assets/panel.js", With::default()).await;
    let kind = js.header("content-type");
    assert_eq!(
        (js.status, kind.as_str()),
        (200, "text/javascript; charset=utf-8")
    );
    assert_eq!(js.header("content-security-policy"), CSP);
    assert!(js.body.contains("EventSource"));
    let css = h.req("GET", "/ui/assets/panel.css", With::default()).await;
    assert_eq!(css.header("content-type"), "text/css; charset=utf-8");
    let missing = h.req("GET", "/ui/assets/nothing.js", With::default()).await;
    assert_eq!(missing.status, 404);
    h.db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_text_comes_out_escaped() {
    let h = Harness::start().await;
    h.submit("tok-alice", "alice-1", "done", HOSTILE_NAME).await;
    h.submit("tok-alice", "alice-1", "ask", "ask 'colour'")
        .await;
    let alice = h.sign_in("tok-alice").await;
    let page = h.page(&alice, "alice-1").await.body;
    assert!(!page.contains("<script>alert"), "{page}");
    assert!(!page.contains("<img"), "{page}");
    let name = "&lt;script&gt;alert(&quot;name&quot;)&lt;/script&gt;";
    assert!(page.contains(name), "{page}");
    let result = "&lt;img src=x onerror=&#39;alert(1)&#39;&gt; &quot;done&quot;";
    assert!(page.contains(result), "{page}");
    assert!(page.contains("ask &#39;colour&#39;"));
    assert!(page.contains("data-count=\"1\""), "one active task: {page}");
    assert!(page.contains("name=\"request_id\" value=\"q1\""), "{page}");
    h.db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_owner_gets_404_and_sees_nothing() {
    let h = Harness::start().await;
    let done = h
        .submit("tok-alice", "alice-1", "done", "alice's report")
        .await;
    let ask = h
        .submit("tok-alice", "alice-1", "ask", "alice's question")
        .await;
    // Bob has a task of his own: his page carries his CSRF token.
    h.submit("tok-bob", "bob-1", "work", "bob's").await;
    let bob = h.sign_in("tok-bob").await;
    let bob_csrf = csrf_of(&h.page(&bob, "bob-1").await.body);
    let a = h.req("GET", "/ui/threads/alice-1", cookie(&bob)).await;
    assert_eq!(a.status, 404);
    assert!(!a.body.contains("alice's"), "{}", a.body);
    let events = h
        .req("GET", "/ui/threads/alice-1/events", cookie(&bob))
        .await;
    assert_eq!(events.status, 404);
    let body = format!("csrf={bob_csrf}");
    for task in [&done, &ask] {
        assert_eq!(h.detail(&bob, "alice-1", task).await.status, 404);
        assert_eq!(h.detail(&bob, "bob-1", task).await.status, 404);
        let cancel = format!("/ui/threads/alice-1/tasks/{task}/cancel");
        assert_eq!(h.req("POST", &cancel, form(&bob, &body)).await.status, 404);
    }
    let list = h
        .req("GET", "/ui/threads/alice-1/tasks", cookie(&bob))
        .await;
    let (status, listing) = (list.status, list.body.as_str());
    assert_eq!((status, listing), (200, "{\"tasks\":[]}"), "the API's rule");
    let alice = h.sign_in("tok-alice").await;
    let detail = h.detail(&alice, "alice-1", &ask).await;
    assert!(
        detail.body.contains("\"cancel_requested\":false"),
        "{}",
        detail.body
    );
    h.db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_needs_the_sessions_csrf_token() {
    let h = Harness::start().await;
    let work = h.submit("tok-alice", "alice-1", "work", "long job").await;
    let alice = h.sign_in("tok-alice").await;
    let csrf = csrf_of(&h.page(&alice, "alice-1").await.body);
    let cancel = format!("/ui/threads/alice-1/tasks/{work}/cancel");
    let altered = format!("csrf={}0", &csrf[1..]);
    for body in [None, Some("csrf="), Some(altered.as_str())] {
        let with = With {
            body,
            ..cookie(&alice)
        };
        assert_eq!(h.req("POST", &cancel, with).await.status, 403, "{body:?}");
    }
    let good = format!("csrf={csrf}");
    let cross = With {
        header: Some(CROSS_SITE),
        ..form(&alice, &good)
    };
    assert_eq!(h.req("POST", &cancel, cross).await.status, 403);
    // Another session's token is no better.
    let other = h.sign_in("tok-alice").await;
    let other_csrf = csrf_of(&h.page(&other, "alice-1").await.body);
    assert_ne!(other_csrf, csrf);
    let theirs = format!("csrf={other_csrf}");
    assert_eq!(
        h.req("POST", &cancel, form(&alice, &theirs)).await.status,
        403
    );
    let detail = h.detail(&alice, "alice-1", &work).await;
    assert!(
        detail.body.contains("\"cancel_requested\":false"),
        "untouched"
    );

    let a = h.req("POST", &cancel, form(&alice, &good)).await;
    assert_eq!(a.status, 303);
    assert_eq!(a.header("location"), "/ui/threads/alice-1");
    let detail = h.detail(&alice, "alice-1", &work).await;
    assert!(
        detail.body.contains("\"cancel_requested\":true"),
        "{}",
        detail.body
    );
    h.db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_needs_the_sessions_csrf_token_and_goes_through_the_api() {
    let h = Harness::start().await;
    let ask = h.submit("tok-alice", "alice-1", "ask", "question").await;
    let alice = h.sign_in("tok-alice").await;
    let csrf = csrf_of(&h.page(&alice, "alice-1").await.body);
    let answer = format!("/ui/threads/alice-1/tasks/{ask}/answer");
    let no_token = form(&alice, "request_id=q1&answer=%7B%7D");
    assert_eq!(h.req("POST", &answer, no_token).await.status, 403);
    let not_object = format!("csrf={csrf}&request_id=q1&answer=blue");
    let a = h.req("POST", &answer, form(&alice, &not_object)).await;
    assert_eq!(a.status, 422);
    let body = format!("csrf={csrf}&request_id=q1&answer=%7B%22action%22%3A%22accept%22%7D");
    let a = h.req("POST", &answer, form(&alice, &body)).await;
    assert_eq!(a.status, 303, "{}", a.body);
    let detail = h.detail(&alice, "alice-1", &ask).await.body;
    let pending = "\"answer\":{\"request_id\":\"q1\",\"status\":\"pending\"}";
    assert!(detail.contains(pending), "{detail}");
    // The API's rule: one answer waits at a time.
    assert_eq!(
        h.req("POST", &answer, form(&alice, &body)).await.status,
        409
    );
    h.db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_answers_304_while_unchanged_and_a_new_etag_after_a_change() {
    let h = Harness::start().await;
    let task = h.submit("tok-alice", "alice-1", "work", "watched").await;
    let alice = h.sign_in("tok-alice").await;
    let list = "/ui/threads/alice-1/tasks";
    let first = h.req("GET", list, cookie(&alice)).await;
    let etag = first.header("etag");
    assert_eq!((first.status, etag.len()), (200, 34), "{etag}");
    let if_none_match = With {
        header: Some(("if-none-match", &etag)),
        ..cookie(&alice)
    };
    let again = h.req("GET", list, if_none_match).await;
    assert_eq!((again.status, again.body.as_str()), (304, ""));
    assert_eq!(again.header("etag"), etag);
    let detail = format!("/ui/threads/alice-1/tasks/{task}");
    let d_etag = h.req("GET", &detail, cookie(&alice)).await.header("etag");
    let d_match = With {
        header: Some(("if-none-match", &d_etag)),
        ..cookie(&alice)
    };
    assert_eq!(h.req("GET", &detail, d_match).await.status, 304);

    h.submit("tok-alice", "alice-1", "work", "another").await;
    let changed = h.req("GET", list, if_none_match).await;
    assert_eq!(changed.status, 200);
    assert_ne!(changed.header("etag"), etag);
    h.db.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_pushes_a_change_of_its_thread_within_seconds_and_is_counted_while_open() {
    let h = Harness::start().await;
    let task = h.submit("tok-alice", "alice-1", "work", "watched").await;
    let alice = h.sign_in("tok-alice").await;
    let url = format!("http://{}/ui/threads/alice-1/events", h.addr);
    let cookie = format!("tasklatch_ui={alice}");
    let stream = h.http.get(url).header("cookie", cookie).send().await;
    let mut stream = stream.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stream.status().as_u16(), 200);
    let mut seen = String::new();
    read_until(&mut stream, &mut seen, "event: ready\ndata: ready\n").await;
    // A write to another thread is not this stream's business; this thread's is.
    h.submit("tok-alice", "alice-2", "work", "elsewhere").await;
    let changed = Instant::now();
    let bearer = With {
        token: Some("tok-alice"),
        ..With::default()
    };
    let cancel = format!("/v1/threads/alice-1/tasks/{task}/cancel");
    assert_eq!(h.req("POST", &cancel, bearer).await.status, 200);
    read_until(&mut stream, &mut seen, "event: change\ndata: change\n").await;
    let after = changed.elapsed();
    assert!(after < Duration::from_secs(3), "pushed after {after:?}");
    assert_eq!(seen.matches("event: change").count(), 1, "{seen}");
    let open = h.req("GET", "/metrics", With::default()).await.body;
    assert!(open.contains("\ntasklatch_ui_streams 1\n"), "{open}");
    // The worker stopping ends the stream, and the gauge follows.
    let _ = h.stop.send(true);
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        while let Ok(Some(_)) = stream.chunk().await {}
    });
    ended
        .await
        .unwrap_or_else(|_| panic!("the stream outlived the stop"));
    let closed = h.req("GET", "/metrics", With::default()).await.body;
    assert!(closed.contains("\ntasklatch_ui_streams 0\n"), "{closed}");
    h.db.cleanup().await;
}

/// Reads `stream` into `seen` until it holds `what` (5 s at most).
async fn read_until(stream: &mut reqwest::Response, seen: &mut String, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !seen.contains(what) {
        let left = deadline.saturating_duration_since(Instant::now());
        let chunk = tokio::time::timeout(left, stream.chunk()).await;
        match chunk {
            Ok(Ok(Some(bytes))) => seen.push_str(&String::from_utf8_lossy(&bytes)),
            other => panic!("no {what:?} within 5 s ({other:?}); seen: {seen}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_with_the_panel_pushes_its_listeners_thread_changes() {
    let db = TestDb::create().await;
    let (port, mcp) = (live::free_port(), live::free_port());
    let agent = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let agent_port = agent.local_addr().map(|a| a.port()).unwrap_or_default();
    live::agent_server_double(agent, live::ASSISTANT_FOUND);
    let text = format!(
        "{}check_thread_owner = false\n[ui]\nenabled = true\nsecure_cookie = false\n",
        live::config(port, mcp, agent_port)
    );
    let worker = live::LiveWorker::start(live::settings(&text, db.url()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let http = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{port}");
    let res = http
        .post(format!("{base}/ui/session"))
        .bearer_auth(live::TOKEN)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(res.status().as_u16(), 204);
    let cookie = res
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(
        !cookie.contains("Secure"),
        "ui.secure_cookie = false: {cookie}"
    );
    let session = cookie.split(';').next().unwrap_or_default().to_owned();
    let thread = "0d6f8a52-1c7e-4b8e-9a51-7f0c2b9d3e41";
    let mut stream = http
        .get(format!("{base}/ui/threads/{thread}/events"))
        .header("cookie", &session)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stream.status().as_u16(), 200);
    let mut seen = String::new();
    read_until(&mut stream, &mut seen, "event: ready\ndata: ready\n").await;
    // The listener's "anything may have changed" on connecting may still come: let it pass.
    let settle = Instant::now() + Duration::from_millis(1_500);
    while let Ok(Ok(Some(_))) = tokio::time::timeout_at(settle.into(), stream.chunk()).await {}
    seen.clear();
    let key = thread_key(&OwnerId::from("alice"), &ThreadId::from(thread));
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(CHANNEL)
        .bind(&key)
        .execute(db.pool())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    read_until(&mut stream, &mut seen, "event: change\ndata: change\n").await;
    drop(stream);
    worker.kill().await;
    db.cleanup().await;
}
