//! The whole-row column list (`sql/store/task_columns.sql`, written once and filled into every
//! statement that returns whole rows) is every column of the migrated `tasks` table, in table
//! order: a migration that adds a column must add it there too.

use tasklatch_pg::connect;
use tasklatch_pg::harness::TestDb;

/// The column names of `task_columns.sql`, in its order (its comment lines skipped).
fn listed_columns() -> Vec<String> {
    include_str!("../sql/store/task_columns.sql")
        .lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .flat_map(|l| l.split(','))
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn the_listed_columns_are_the_tables_in_table_order() {
    let db = TestDb::create().await;
    let pool = connect(db.url(), 1).await.unwrap();
    let table: Vec<String> = sqlx::query_scalar(
        "SELECT column_name::text FROM information_schema.columns \
         WHERE table_schema = current_schema() AND table_name = 'tasks' \
         ORDER BY ordinal_position",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert!(!table.is_empty(), "no tasks table in the session's schema");
    assert_eq!(listed_columns(), table);
    pool.close().await;
    db.cleanup().await;
}
