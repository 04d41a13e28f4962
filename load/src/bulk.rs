//! Bulk rows for scale tests and the benchmark: a million task rows in seconds, through one
//! `INSERT … SELECT generate_series` with the secondary indexes rebuilt afterwards (exactly as
//! the migrations define them).
//!
//! The mix resembles a long-running installation: most tasks are finished and delivered (in no
//! claim index); [`Mix`] says how many are pollable, have undelivered work, or wait for a cancel.

use sqlx::{PgPool, Row};
use tasklatch_core::time::Timestamp;

/// How many of every 10,000 bulk rows are in each claimable state (the rest are completed and
/// delivered), and how they are spread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mix {
    /// Ids are `{prefix}{i:08}`, remote ids `rem-{prefix}{i}`.
    pub prefix: String,
    /// Row i is on thread `thread-{i % threads}` of owner `owner-{i % 1000}` (make it a
    /// multiple of 1000 so a thread has one owner).
    pub threads: u32,
    /// Due times are spread over `(now, now + spread]`.
    pub spread: std::time::Duration,
    /// Working tasks; their next poll is spread over the hour after `now` (not yet due).
    pub pollable: u32,
    /// Completed tasks with an undelivered version, due over the hour after `now`.
    pub undelivered: u32,
    /// Working tasks with a cancel requested, due over the hour after `now`.
    pub cancelling: u32,
}

impl Default for Mix {
    /// 2 % pollable, 0.5 % undelivered, 0.1 % cancelling, due over an hour, 5,000 threads.
    fn default() -> Self {
        Mix {
            prefix: "bulk-".into(),
            threads: 5_000,
            spread: std::time::Duration::from_secs(3_600),
            pollable: 200,
            undelivered: 50,
            cancelling: 10,
        }
    }
}

/// Inserts `count` rows with ids `{prefix}00000001`… (see [`Mix`]), none of them due at `now`. Secondary indexes are dropped first and
/// rebuilt from their own definitions afterwards, then the table is analysed. `tasks` is the
/// one in the pool's schema (`current_schema()`; other schemas' are left alone). Not for a
/// database other processes are using.
pub async fn insert_rows(
    pool: &PgPool,
    count: u64,
    now: Timestamp,
    mix: Mix,
) -> Result<(), sqlx::Error> {
    let mut conn = pool.acquire().await?;
    let defs: Vec<(String, String)> = sqlx::query(
        "SELECT indexname, indexdef FROM pg_indexes \
         WHERE schemaname = current_schema() AND tablename = 'tasks' \
           AND indexname <> 'tasks_pkey'",
    )
    .fetch_all(&mut *conn)
    .await?
    .iter()
    .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
    .collect::<Result<_, sqlx::Error>>()?;
    for (name, _) in &defs {
        sqlx::query(sqlx::AssertSqlSafe(format!("DROP INDEX \"{name}\"")))
            .execute(&mut *conn)
            .await?;
    }
    // Pack the bulk rows (they are never updated); later rows get the table's own fill factor.
    let options: Option<Vec<String>> = sqlx::query_scalar(
        "SELECT reloptions FROM pg_class \
             WHERE relname = 'tasks' AND relnamespace = current_schema()::regnamespace",
    )
    .fetch_one(&mut *conn)
    .await?;
    sqlx::query("ALTER TABLE tasks SET (fillfactor = 100)")
        .execute(&mut *conn)
        .await?;
    drop(conn);
    // Two halves on two connections: the row expressions are CPU-bound.
    let count = i64::try_from(count).unwrap_or(i64::MAX);
    let half = count / 2;
    let parts = [(1, half), (half + 1, count)];
    futures::future::try_join_all(
        parts
            .iter()
            .filter(|(from, to)| from <= to)
            .map(|&(from, to)| insert_range(pool, from, to, now, &mix)),
    )
    .await?;
    let mut conn = pool.acquire().await?;
    let restore = match options
        .unwrap_or_default()
        .iter()
        .find_map(|o| o.strip_prefix("fillfactor=").map(str::to_owned))
    {
        Some(ff) if ff.chars().all(|c| c.is_ascii_digit()) => {
            format!("ALTER TABLE tasks SET (fillfactor = {ff})")
        }
        _ => "ALTER TABLE tasks RESET (fillfactor)".to_owned(),
    };
    sqlx::query(sqlx::AssertSqlSafe(restore))
        .execute(&mut *conn)
        .await?;
    for (_, def) in &defs {
        sqlx::query(sqlx::AssertSqlSafe(def.clone()))
            .execute(&mut *conn)
            .await?;
    }
    sqlx::query("ANALYZE tasks").execute(&mut *conn).await?;
    Ok(())
}

/// Inserts bulk rows `from..=to`.
async fn insert_range(
    pool: &PgPool,
    from: i64,
    to: i64,
    now: Timestamp,
    mix: &Mix,
) -> Result<(), sqlx::Error> {
    let p = i64::from(mix.pollable);
    let u = p + i64::from(mix.undelivered);
    let c = u + i64::from(mix.cancelling);
    sqlx::query(
        "INSERT INTO tasks (id, owner, thread, server, name, remote_task_id, driver_data, \
             created_at, remote_status, remote_result, remote_result_truncated, \
             remote_updated_at, remote_observed_at, poll_next_at, poll_consecutive_errors, \
             poll_claims, event_version, notified_version, fingerprint, event, notify_status, \
             notify_due_at, notify_claims, dispatch_version, dispatch_attempt, notify_failures, \
             busy_count, cancel_requested_at, cancel_status, cancel_due_at, cancel_claims, \
             cancel_failures) \
         SELECT id, 'owner-' || (i % 1000), 'thread-' || (i % $8), 'srv', 'task ' || i, \
             'rem-' || id, 'drv', $1 - 86400000000 + i, \
             CASE WHEN w THEN 'working' ELSE 'completed' END, \
             CASE WHEN w THEN NULL ELSE '{\"ok\":true}' END, false, \
             $1 - 3600000000, $1 - 3600000000, \
             CASE WHEN w THEN $1 + 1 + (i * 7919) % $9 END, 0, 1, \
             CASE WHEN w THEN 0 ELSE 1 END, \
             CASE WHEN w OR pend THEN 0 ELSE 1 END, \
             CASE WHEN w THEN NULL ELSE encode(sha256(convert_to(ev, 'UTF8')), 'hex') END, \
             CASE WHEN w THEN NULL ELSE ev END, \
             CASE WHEN w THEN 'none' WHEN pend THEN 'pending' ELSE 'delivered' END, \
             $1 + 1 + (i * 104729) % $9, \
             CASE WHEN w OR pend THEN 0 ELSE 1 END, \
             CASE WHEN w OR pend THEN 0 ELSE 1 END, 0, 0, 0, \
             CASE WHEN canc THEN $1 - 1000000 END, \
             CASE WHEN canc THEN 'requested' ELSE 'none' END, \
             CASE WHEN canc THEN $1 + 1 + (i * 15485863) % $9 END, 0, 0 \
         FROM (SELECT i, $7 || lpad(i::text, 8, '0') AS id, \
                      (i % 10000 < $2 OR (i % 10000 >= $3 AND i % 10000 < $4)) AS w, \
                      (i % 10000 >= $2 AND i % 10000 < $3) AS pend, \
                      (i % 10000 >= $3 AND i % 10000 < $4) AS canc, \
                      '{\"artifact\":null,\"error\":null,\"input_request\":null,\"name\":\"task ' \
                          || i || '\",\"poll_error\":null,\"poll_error_class\":null,' \
                          || '\"result\":\"{\\\"ok\\\":true}\",\"result_truncated\":false,' \
                          || '\"status\":\"completed\",\"task_id\":\"' || $7 || lpad(i::text, 8, '0') \
                          || '\",\"tracking_degraded\":false}' AS ev \
               FROM generate_series($5::bigint, $6::bigint) AS i) s",
    )
    .bind(now.as_micros())
    .bind(p)
    .bind(u)
    .bind(c)
    .bind(from)
    .bind(to)
    .bind(mix.prefix.as_str())
    .bind(i64::from(mix.threads.max(1)))
    .bind(tasklatch_core::time::micros_of(mix.spread).max(1))
    .execute(pool)
    .await?;
    Ok(())
}
