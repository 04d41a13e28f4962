//! The backlog gauges on `/metrics` (issue 23 item 6): a scrape shows the backlog read from
//! the database — due and overdue rows per loop, the oldest due row's age, the dead letters by
//! kind and reason; scrapes within the refresh interval do not read it again; a read that fails
//! leaves the last values, is counted, and is logged once however many scrapes fail.

mod support;

use axum::http::{Method, StatusCode};
use axum::Router;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::{app_state, bearer, call, EveryThread, NoTasks};
use tasklatch_core::conformance::support::{
    claim, notify, policy, poll_once, report, submitted, t,
};
use tasklatch_core::engine::SubmitError;
use tasklatch_core::lease::LeaseKind;
use tasklatch_core::ports::Clock;
use tasklatch_core::status::RemoteStatus;
use tasklatch_core::store::{AnswerOutcome, Store};
use tasklatch_core::time::Timestamp;
use tasklatch_core::transitions::outbox::NotifyAction;
use tasklatch_pg::harness::TestDb;
use tasklatch_pg::{connect, PgStore};
use tasklatch_worker::api::router;
use tasklatch_worker::backlog::BacklogGauges;
use tasklatch_worker::clock::SystemClock;

/// The router over `db`, its backlog gauges read from `store` through `gauges` (which must
/// write to the state's metrics: `gauges` gets them).
fn app(
    db: &TestDb,
    gauges: impl FnOnce(Arc<tasklatch_worker::metrics::Metrics>) -> BacklogGauges,
) -> Router {
    let tasks = Arc::new(NoTasks {
        submit: || SubmitError::NotStarted("not in this test".into()),
        answer: || Ok(AnswerOutcome::NotFound),
    });
    let threads = Arc::new(EveryThread);
    let mut state = app_state(tasks, 1, bearer(&[]), &[], threads, db.pool().clone());
    state.backlog = Some(Arc::new(gauges(state.metrics.clone())));
    router(state, 4 << 10, 8)
}

/// The value of the sample `series` (name and labels, exactly as exposed) in `text`.
fn value(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no sample {series} in\n{text}"))
}

async fn scrape(app: &Router) -> String {
    let (status, _, text) = call(app, Method::GET, "/metrics", None, None).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    text
}

/// Rows in known states, `now` being this host's clock: two due polls (one for 600 s: overdue;
/// one for 5 s), one poll an hour ahead; an undelivered notification due since `t(0)` (years
/// ago); a notification dead-lettered because its thread is gone.
async fn known_rows(s: &PgStore, now: Timestamp) {
    s.insert_task(submitted("dead", t(0))).await.unwrap();
    poll_once(s, "dead", 0, |r| report(r, RemoteStatus::Completed, t(0)))
        .await
        .unwrap();
    let c = claim(s, LeaseKind::Notify, "n", t(1), 10).await;
    notify(s, &c[0], NotifyAction::ThreadGone, 2).await.unwrap();
    s.insert_task(submitted("untold", t(0))).await.unwrap();
    poll_once(s, "untold", 0, |r| report(r, RemoteStatus::Completed, t(0)))
        .await
        .unwrap();
    for (id, at) in [
        ("old", now.minus(Duration::from_secs(600))),
        ("new", now.minus(Duration::from_secs(5))),
        ("later", now.plus(Duration::from_secs(3_600))),
    ] {
        s.insert_task(submitted(id, at)).await.unwrap();
    }
}

#[tokio::test]
async fn a_scrape_shows_the_backlog_read_at_most_once_per_interval() {
    let db = TestDb::create().await;
    let store = PgStore::new(db.pool().clone(), policy());
    let app = app(&db, |m| BacklogGauges::new(store.clone(), m));
    let fresh = scrape(&app).await;
    assert_eq!(value(&fresh, "tasklatch_backlog_due{loop=\"poll\"}"), 0.0);
    assert!(value(&fresh, "tasklatch_backlog_refreshed_timestamp_seconds") > 0.0);

    // A new refresher (the first one has read an empty table and keeps that for 15 s).
    let (app, rows_at) = app_with_rows(&db, &store).await;
    let (before, text, after) = timed_scrape(&app).await;
    assert_eq!(
        value(&text, "tasklatch_backlog_due{loop=\"poll\"}"),
        2.0,
        "{text}"
    );
    assert_eq!(
        value(&text, "tasklatch_backlog_overdue{loop=\"poll\"}"),
        1.0
    );
    let age = value(
        &text,
        "tasklatch_backlog_oldest_due_age_seconds{loop=\"poll\"}",
    );
    let waited = |at: f64| 600.0 + at - rows_at;
    assert!((waited(before)..=waited(after)).contains(&age), "{age}");
    assert_eq!(value(&text, "tasklatch_backlog_due{loop=\"notify\"}"), 1.0);
    assert_eq!(
        value(&text, "tasklatch_backlog_overdue{loop=\"notify\"}"),
        1.0
    );
    let age = value(
        &text,
        "tasklatch_backlog_oldest_due_age_seconds{loop=\"notify\"}",
    );
    let since_t0 = |at: f64| at - t(0).as_micros() as f64 / 1e6;
    assert!((since_t0(before)..=since_t0(after)).contains(&age), "{age}");
    assert_eq!(value(&text, "tasklatch_backlog_due{loop=\"cancel\"}"), 0.0);
    for (kind, reason, n) in [
        ("notify", "thread_gone", 1.0),
        ("notify", "budget", 0.0),
        ("notify", "unavailable", 0.0),
        ("cancel", "budget", 0.0),
        ("cancel", "unavailable", 0.0),
    ] {
        let series =
            format!("tasklatch_backlog_dead_letters{{kind=\"{kind}\",reason=\"{reason}\"}}");
        assert_eq!(value(&text, &series), n, "{series}");
    }
    // More work now, but the last read is recent: the database is not asked again.
    store.insert_task(submitted("newer", t(0))).await.unwrap();
    let text = scrape(&app).await;
    assert_eq!(
        value(&text, "tasklatch_backlog_due{loop=\"poll\"}"),
        2.0,
        "read again"
    );
    db.cleanup().await;
}

/// [`known_rows`], then a router whose refresher has not read yet; and the `now` of the rows
/// (Unix seconds).
async fn app_with_rows(db: &TestDb, store: &PgStore) -> (Router, f64) {
    let now = SystemClock.now();
    known_rows(store, now).await;
    let store = store.clone();
    let app = app(db, move |m| BacklogGauges::new(store, m));
    (app, now.as_micros() as f64 / 1e6)
}

/// A scrape with this host's clock (Unix seconds) read just before and just after it.
async fn timed_scrape(app: &Router) -> (f64, String, f64) {
    let secs = || SystemClock.now().as_micros() as f64 / 1e6;
    let before = secs();
    let text = scrape(app).await;
    (before, text, secs())
}

/// Everything logged at info and above while the guard lives (this thread only).
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(|p| p.into_inner())).into_owned()
    }
}

#[tokio::test]
async fn a_failing_read_keeps_the_last_values_and_is_logged_once() {
    let log = Captured::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let db = TestDb::create().await;
    let store = PgStore::new(db.pool().clone(), policy());
    known_rows(&store, SystemClock.now()).await;
    // The refresher's own pool, closed below: its reads fail from then on. Every scrape reads.
    let pool = connect(db.url(), 1).await.unwrap();
    let own = PgStore::new(pool.clone(), policy());
    let app = app(&db, move |m| {
        BacklogGauges::new(own, m).refreshing_every(Duration::ZERO)
    });
    let read = scrape(&app).await;
    assert_eq!(
        value(&read, "tasklatch_backlog_due{loop=\"poll\"}"),
        2.0,
        "{read}"
    );
    let refreshed = value(&read, "tasklatch_backlog_refreshed_timestamp_seconds");

    pool.close().await;
    for n in 1..=3 {
        let text = scrape(&app).await;
        let errors = value(&text, "tasklatch_store_errors_total{op=\"backlog\"}");
        assert_eq!(errors, f64::from(n), "{text}");
        for series in [
            "tasklatch_backlog_due{loop=\"poll\"}",
            "tasklatch_backlog_overdue{loop=\"poll\"}",
            "tasklatch_backlog_oldest_due_age_seconds{loop=\"poll\"}",
            "tasklatch_backlog_due{loop=\"notify\"}",
            "tasklatch_backlog_dead_letters{kind=\"notify\",reason=\"thread_gone\"}",
            "tasklatch_backlog_refreshed_timestamp_seconds",
        ] {
            assert_eq!(
                value(&text, series),
                value(&read, series),
                "{series} changed"
            );
        }
        assert_eq!(
            value(&text, "tasklatch_backlog_refreshed_timestamp_seconds"),
            refreshed
        );
    }
    let warnings: Vec<String> = log
        .text()
        .lines()
        .filter(|l| l.contains("backlog gauges not read"))
        .map(str::to_owned)
        .collect();
    assert_eq!(warnings.len(), 1, "{}", log.text());
    assert!(warnings[0].contains("WARN"), "{}", warnings[0]);
    assert!(!log.text().contains(db.url()), "the URL is never logged");
    db.cleanup().await;
}
