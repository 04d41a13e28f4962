//! One open panel, as the panel's script behaves (`worker/src/ui/assets/panel.js`): signed in
//! by the token exchange, it holds the push stream open; on `ready` and on every `change` it
//! waits the script's 200 ms debounce (a change during the wait restarts it) and fetches the
//! page again. Each fetched page's task ids are noted with the moment the page arrived: the
//! first moment a task was on screen. Without a browser: what is measured is the worker's and
//! the database's share, not the browser's drawing.

use crate::bench::BenchError;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// The script's debounce before a render.
const DEBOUNCE: Duration = Duration::from_millis(200);
/// How long the sign-in and the stream's `ready` may take.
const OPEN_WITHIN: Duration = Duration::from_secs(30);

/// When each task id was first on this panel's page.
pub(super) type Seen = Arc<Mutex<BTreeMap<String, Instant>>>;

/// An open panel's shared record.
pub(super) struct Viewer {
    pub seen: Seen,
    pub renders: Arc<AtomicU64>,
}

/// Opens the panel of `thread` with `token` and keeps it open until `stop`: once this returns,
/// the stream said `ready`.
pub(super) async fn open(
    http: &reqwest::Client,
    addr: SocketAddr,
    token: &str,
    thread: &str,
    stop: watch::Receiver<bool>,
) -> Result<Viewer, BenchError> {
    let cookie = sign_in(http, addr, token).await?;
    let page = format!("http://{addr}/ui/threads/{thread}");
    let stream = http
        .get(format!("{page}/events"))
        .header("cookie", &cookie)
        .send()
        .await
        .map_err(|e| BenchError(format!("{thread}: events: {e}")))?;
    if !stream.status().is_success() {
        return Err(BenchError(format!("{thread}: events: {}", stream.status())));
    }
    let viewer = Viewer {
        seen: Seen::default(),
        renders: Arc::default(),
    };
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    let fetch = Fetch {
        http: http.clone(),
        page,
        cookie,
        seen: viewer.seen.clone(),
        renders: viewer.renders.clone(),
    };
    tokio::spawn(follow(stream, fetch, ready_tx, stop));
    match tokio::time::timeout(OPEN_WITHIN, ready_rx).await {
        Ok(Ok(())) => Ok(viewer),
        _ => Err(BenchError(format!("{thread}: the stream never said ready"))),
    }
}

/// The token exchange: the session cookie (`name=value`).
async fn sign_in(
    http: &reqwest::Client,
    addr: SocketAddr,
    token: &str,
) -> Result<String, BenchError> {
    let res = http
        .post(format!("http://{addr}/ui/session"))
        .header("authorization", format!("Bearer {token}"))
        .send()
        .await
        .map_err(|e| BenchError(format!("sign-in: {e}")))?;
    let cookie = res
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(str::to_owned);
    match (res.status().as_u16(), cookie) {
        (204, Some(c)) => Ok(c),
        (status, _) => Err(BenchError(format!("sign-in answered {status}"))),
    }
}

/// What a render needs.
struct Fetch {
    http: reqwest::Client,
    page: String,
    cookie: String,
    seen: Seen,
    renders: Arc<AtomicU64>,
}

impl Fetch {
    /// Fetches the page and notes the task ids on it.
    async fn render(&self) {
        let res = self
            .http
            .get(&self.page)
            .header("cookie", &self.cookie)
            .send()
            .await;
        let Ok(body) = (match res {
            Ok(r) => r.text().await,
            Err(e) => Err(e),
        }) else {
            return;
        };
        let at = Instant::now();
        self.renders.fetch_add(1, Ordering::Relaxed);
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        for id in task_ids(&body) {
            seen.entry(id.to_owned()).or_insert(at);
        }
    }
}

/// The `data-task` ids of a page.
fn task_ids(page: &str) -> impl Iterator<Item = &str> {
    page.split("data-task=\"")
        .skip(1)
        .filter_map(|rest| rest.split_once('"').map(|(id, _)| id))
}

/// Reads the stream, renders after each debounced `ready` or `change`, until `stop` or the
/// stream's end.
async fn follow(
    mut stream: reqwest::Response,
    fetch: Fetch,
    ready: tokio::sync::oneshot::Sender<()>,
    mut stop: watch::Receiver<bool>,
) {
    let mut ready = Some(ready);
    let mut text = String::new();
    let mut due: Option<tokio::time::Instant> = None;
    loop {
        let wake = due.unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(3600));
        tokio::select! {
            biased;
            changed = stop.changed() => {
                if changed.is_err() || *stop.borrow() {
                    return;
                }
            }
            _ = tokio::time::sleep_until(wake), if due.is_some() => {
                due = None;
                fetch.render().await;
                if let Some(r) = ready.take() {
                    let _ = r.send(());
                }
            }
            chunk = stream.chunk() => match chunk {
                Ok(Some(bytes)) => {
                    text.push_str(&String::from_utf8_lossy(&bytes));
                    if take_events(&mut text) > 0 {
                        due = Some(tokio::time::Instant::now() + DEBOUNCE);
                    }
                }
                _ => return,
            },
        }
    }
}

/// Removes the complete events (`ready` or `change`) from the front of `text`: how many.
fn take_events(text: &mut String) -> usize {
    let mut n = 0;
    while let Some(end) = text.find("\n\n") {
        let event: String = text.drain(..end + 2).collect();
        n += usize::from(event.contains("event: ready") || event.contains("event: change"));
    }
    n
}
