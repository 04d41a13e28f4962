//! The retention loop's pass (issue 11 item 11) on Postgres: finished, settled tasks older than
//! the age go — in statements of the configured batch, as many as needed — with their ended
//! runs; undelivered work, recent tasks and a run still running stay; the metric counts what
//! went.

use std::time::Duration;
use tasklatch_core::conformance::support::{policy, poll_once, report, row, submitted, t};
use tasklatch_core::status::RemoteStatus;
use tasklatch_core::store::Store;
use tasklatch_pg::harness::TestDb;
use tasklatch_pg::PgStore;
use tasklatch_worker::metrics::Metrics;
use tasklatch_worker::retention::{pass, Retention};

/// A task that finished at `at` seconds with nothing to deliver (no event ever recorded).
async fn finished(s: &PgStore, id: &str, at: i64) {
    let mut r = submitted(id, t(at));
    r.remote.status = RemoteStatus::Completed;
    r.poll.next_poll_at = None;
    s.insert_task(r).await.unwrap();
}

#[tokio::test]
async fn a_pass_deletes_old_settled_tasks_in_batches_with_their_ended_runs() {
    let db = TestDb::create().await;
    let s = PgStore::new(db.pool().clone(), policy());
    for id in ["old1", "old2", "old10"] {
        finished(&s, id, 0).await;
    }
    finished(&s, "recent", 7_000).await;
    // Finished long ago but not yet told: an undelivered event.
    s.insert_task(submitted("untold", t(0))).await.unwrap();
    poll_once(&s, "untold", 0, |r| {
        report(r, RemoteStatus::Completed, t(0))
    })
    .await
    .unwrap();
    let untold = row(&s, "untold").await;

    for statement in [
        "INSERT INTO threads (thread, owner, created_at) VALUES ('th1', 'alice', 0)",
        "INSERT INTO runs (seq, run_id, key, owner, thread, prompt, status, created_at) VALUES \
           (1, 'run-1', 'task:old1:1:0', 'alice', 'th1', 'p', 'success', 0), \
           (2, 'run-2', 'task:old1:1:1', 'alice', 'th1', 'p', 'running', 0), \
           (3, 'run-3', 'task:old2:1:0', 'alice', 'th1', 'p', 'error', 0), \
           (4, 'run-4', 'task:recent:1:0', 'alice', 'th1', 'p', 'success', 0)",
    ] {
        sqlx::query(statement).execute(db.pool()).await.unwrap();
    }

    let metrics = Metrics::new();
    let r = Retention {
        after: Duration::from_secs(3_600),
        dead_letters_after: Duration::from_secs(3_600),
        every: Duration::from_secs(60),
        batch: 2,
    };
    let pruned = pass(&s, t(7_300), &r, &metrics).await.unwrap();
    assert_eq!((pruned.tasks, pruned.runs), (3, 2), "{pruned:?}");

    let left: Vec<String> = s
        .admin_rows(None, 100)
        .await
        .unwrap()
        .iter()
        .map(|r| r.id().0.clone())
        .collect();
    assert_eq!(left, ["recent", "untold"]);
    assert_eq!(
        row(&s, "untold").await,
        untold,
        "undelivered work untouched"
    );
    let runs: Vec<String> = sqlx::query_scalar("SELECT run_id FROM runs ORDER BY seq")
        .fetch_all(db.pool())
        .await
        .unwrap();
    assert_eq!(
        runs,
        ["run-2", "run-4"],
        "a running run and other tasks' runs stay"
    );

    let text = metrics.render();
    assert!(
        text.contains("tasklatch_pruned_total{what=\"tasks\"} 3"),
        "{text}"
    );
    assert!(
        text.contains("tasklatch_pruned_total{what=\"runs\"} 2"),
        "{text}"
    );
    db.cleanup().await;
}
