//! tasklatch in someone else's database (issue 11 item 9): migrating into a database that
//! already holds a host application's own `public.tasks` table and its own sqlx migration
//! history succeeds, puts every tasklatch object (tables, functions, history) in the schema
//! `tasklatch`, leaves the application's objects, rows and history exactly as they were, and
//! the functions work from the application's own sessions (their search_path is pinned).

mod support;

use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::PgPool;
use support::{alice, claim, ids, policy, submitted, t};
use tasklatch_core::lease::LeaseKind;
use tasklatch_core::policy::DEFAULT_LIST;
use tasklatch_core::store::{ListOrder, Store};
use tasklatch_pg::harness::{with_search_path, TestDb};
use tasklatch_pg::{connect, migrate, MigrationError, PgStore, SchemaName, MIGRATOR};

/// The host application's own sqlx migrations: tables tasklatch also has (`tasks`, `threads`,
/// `runs`) with other columns, and rows in them.
fn app_migrator() -> Migrator {
    let step = |version: i64, description: &'static str, sql: &'static str| {
        Migration::new(
            version,
            description.into(),
            MigrationType::Simple,
            sqlx::SqlSafeStr::into_sql_str(sqlx::AssertSqlSafe(sql)),
            false,
        )
    };
    Migrator::with_migrations(vec![
        step(
            1,
            "app tasks",
            "CREATE TABLE tasks (id bigint PRIMARY KEY, title text NOT NULL); \
             INSERT INTO tasks VALUES (1, 'write the report'), (2, 'call the bank');",
        ),
        step(
            2,
            "app threads and runs",
            "CREATE TABLE threads (thread text PRIMARY KEY, topic text); \
             CREATE TABLE runs (seq bigint PRIMARY KEY, what text); \
             INSERT INTO threads VALUES ('th-1', 'not tasklatch''s');",
        ),
    ])
}

/// Everything of the application's that tasklatch must not touch: its tables' rows, its
/// migration history, and the list of objects in `public`.
async fn app_state(app: &PgPool) -> Vec<String> {
    let mut state: Vec<String> = sqlx::query_scalar(
        "SELECT format('%s %s', c.relkind, c.relname) FROM pg_class c \
         JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' \
         UNION ALL SELECT format('fn %s', p.proname) FROM pg_proc p \
         JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public' \
         ORDER BY 1",
    )
    .fetch_all(app)
    .await
    .unwrap();
    for q in [
        "SELECT format('task %s %s', id, title) FROM public.tasks ORDER BY id",
        "SELECT format('thread %s %s', thread, topic) FROM public.threads ORDER BY thread",
        "SELECT format('runs %s', count(*)) FROM public.runs",
        "SELECT format('history %s %s %s %s', version, description, success, encode(checksum, 'hex')) \
         FROM public._sqlx_migrations ORDER BY version",
    ] {
        state.extend(
            sqlx::query_scalar::<_, String>(q)
                .fetch_all(app)
                .await
                .unwrap(),
        );
    }
    state
}

#[tokio::test]
async fn migrating_into_an_apps_database_leaves_the_app_untouched() {
    let db = TestDb::create_empty().await;
    let app = db.pool().clone();
    app_migrator().run(&app).await.unwrap();
    let before = app_state(&app).await;
    assert!(
        before.iter().any(|l| l == "task 1 write the report"),
        "{before:?}"
    );
    assert_eq!(
        before.iter().filter(|l| l.starts_with("history ")).count(),
        2
    );

    // What `tasklatch migrate` does, twice (idempotent).
    let schema = SchemaName::default();
    let url = with_search_path(db.url(), &schema);
    let pool = connect(db.url(), 4).await.unwrap();
    migrate(&pool, &schema).await.unwrap();
    migrate(&pool, &schema).await.unwrap();

    // tasklatch's objects and history are in its schema.
    let history: Vec<i64> =
        sqlx::query_scalar("SELECT version FROM tasklatch._sqlx_migrations ORDER BY version")
            .fetch_all(&app)
            .await
            .unwrap();
    let known: Vec<i64> = MIGRATOR.iter().map(|m| m.version).collect();
    assert_eq!(history, known);
    for object in [
        "tasklatch.tasks",
        "tasklatch.threads",
        "tasklatch.runs",
        "tasklatch.run_seq",
    ] {
        let found: Option<String> = sqlx::query_scalar("SELECT to_regclass($1)::text")
            .bind(object)
            .fetch_one(&app)
            .await
            .unwrap();
        assert_eq!(found.as_deref(), Some(object));
    }

    // The store works on the pool (its connections start in the schema).
    let store = PgStore::new(pool.clone(), policy());
    store.insert_task(submitted("a", t(0))).await.unwrap();
    let listed = store
        .list_tasks(&alice(), ListOrder::Newest, DEFAULT_LIST)
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
    let claimed = claim(&store, LeaseKind::Poll, "w", t(0), 10).await;
    assert_eq!(ids(&claimed), ["a"]);

    // The functions work from the application's own session (search_path public, where a
    // `threads` and a `runs` of the application's live): their search_path is their own.
    sqlx::query(
        "INSERT INTO tasklatch.threads (thread, owner, created_at) VALUES ('th-1', 'alice', 0)",
    )
    .execute(&app)
    .await
    .unwrap();
    let (outcome, run): (String, Option<String>) = sqlx::query_as(
        "SELECT outcome, started_run FROM tasklatch.tasklatch_start_run('k1', 'alice', 'th-1', 'p', 0)",
    )
    .fetch_one(&app)
    .await
    .unwrap();
    assert_eq!((outcome.as_str(), run.is_some()), ("started", true));

    // The application: same objects, same rows, same history; its own migrator still agrees.
    assert_eq!(app_state(&app).await, before);
    app_migrator().run(&app).await.unwrap();

    // A raw connection on the schema-selecting URL sees tasklatch's rows.
    let mut raw = <sqlx::PgConnection as sqlx::Connection>::connect(&url)
        .await
        .unwrap();
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM tasks")
        .fetch_one(&mut raw)
        .await
        .unwrap();
    assert_eq!(n, 1);
    drop(raw);
    pool.close().await;
    db.cleanup().await;
}

#[tokio::test]
async fn an_installation_from_before_the_schema_is_found_not_duplicated() {
    // tasklatch as it was installed before it had a schema: its tables and its history in
    // `public` (the migrations run with the server's default search_path).
    let db = TestDb::create_empty().await;
    MIGRATOR.run(db.pool()).await.unwrap();
    let pool = connect(db.url(), 2).await.unwrap();
    let refused = migrate(&pool, &SchemaName::default()).await;
    match refused {
        Err(MigrationError::InstalledElsewhere { configured, found }) => {
            assert_eq!(
                (configured.as_str(), found.as_str()),
                ("tasklatch", "public")
            );
        }
        other => panic!("expected InstalledElsewhere, got {other:?}"),
    }
    let created: Option<String> = sqlx::query_scalar("SELECT to_regnamespace('tasklatch')::text")
        .fetch_one(db.pool())
        .await
        .unwrap();
    assert_eq!(created, None, "nothing was created");

    // Naming the schema it lives in upgrades it in place.
    let public = SchemaName::new("public").unwrap();
    let in_place = tasklatch_pg::connect_with(
        db.url().parse().unwrap(),
        2,
        &tasklatch_pg::SessionSettings {
            schema: public.clone(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    migrate(&in_place, &public).await.unwrap();
    let applied: i64 = sqlx::query_scalar("SELECT count(*) FROM public._sqlx_migrations")
        .fetch_one(db.pool())
        .await
        .unwrap();
    assert_eq!(applied, i64::try_from(MIGRATOR.iter().count()).unwrap());
    in_place.close().await;
    pool.close().await;
    db.cleanup().await;
}
