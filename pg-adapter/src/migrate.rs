//! Applying the schema into tasklatch's own schema (see `session.rs`).
//!
//! The embedded migrations ([`MIGRATOR`], files under `pg-adapter/migrations/`) name their
//! objects unqualified; they run on a connection whose `search_path` is the configured schema,
//! so every table, sequence and function lands there, and sqlx's history is kept in
//! `<schema>._sqlx_migrations` (created with the schema when missing) — never in a host
//! application's `_sqlx_migrations`. Concurrent migrators are serialised by sqlx's advisory lock
//! (one per database: a host application's sqlx migrator waits for tasklatch's and the other
//! way round, which is harmless).

use crate::session::SchemaName;
use crate::sql;
use sqlx::migrate::{MigrateError, Migrator};
use sqlx::PgPool;

/// The migrations, embedded at build time from `pg-adapter/migrations/`, with sqlx's default
/// history table: use [`migrator`] to run them (it keeps the history in the schema).
pub static MIGRATOR: Migrator = sqlx::migrate!("./migrations");

/// Why migrating failed. Messages hold no row value and no credential.
#[derive(Debug, thiserror::Error)]
pub enum MigrationError {
    /// sqlx's migrator failed (a migration, the history, the connection).
    #[error(transparent)]
    Migrate(#[from] MigrateError),
    /// The configured schema has no history, but tasklatch's migrations are recorded in another
    /// schema's `_sqlx_migrations`: an installation made before tasklatch had a schema of its
    /// own. Migrating would create a second, empty set of tables beside the live ones.
    #[error(
        "tasklatch is already installed in schema `{found}` (its migrations are recorded in \
         {found}._sqlx_migrations) and schema `{configured}` has no history: set the schema \
         setting to `{found}` to keep using that installation (README \"Database\")"
    )]
    InstalledElsewhere {
        /// The schema asked for.
        configured: String,
        /// The schema whose history holds tasklatch's migrations.
        found: String,
    },
}

/// The embedded migrations, keeping their history in `<schema>._sqlx_migrations` and creating
/// `schema` first if it is missing. Run it on a connection whose `search_path` is `schema`
/// ([`migrate`] does).
pub fn migrator(schema: &SchemaName) -> Migrator {
    let mut m = Migrator::with_migrations(MIGRATOR.iter().cloned().collect());
    m.create_schema(schema.as_str().to_owned());
    m.dangerous_set_table_name(format!("{schema}._sqlx_migrations"));
    m
}

/// Applies every pending migration into `schema` of the database behind `pool` (idempotent).
/// Runs on a connection of its own, closed afterwards, with the schema as its `search_path` and
/// no statement or lock timeout (`sql/admin/migration_session.sql`). Refuses with
/// [`MigrationError::InstalledElsewhere`] when the schema has no history yet but another
/// schema's history records tasklatch's first migration (same version, same checksum).
pub async fn migrate(pool: &PgPool, schema: &SchemaName) -> Result<(), MigrationError> {
    let mut conn = pool.acquire().await.map_err(MigrateError::from)?;
    let result = migrate_on(&mut conn, schema).await;
    // The session was changed for migrating: never give it back to the pool.
    let _ = conn.close().await;
    result
}

async fn migrate_on(
    conn: &mut sqlx::PgConnection,
    schema: &SchemaName,
) -> Result<(), MigrationError> {
    sqlx::query(sql::MIGRATION_SESSION)
        .bind(schema.as_str())
        .execute(&mut *conn)
        .await
        .map_err(MigrateError::from)?;
    if let Some(found) = installed_elsewhere(conn, schema).await? {
        return Err(MigrationError::InstalledElsewhere {
            configured: schema.to_string(),
            found,
        });
    }
    migrator(schema).run(&mut *conn).await?;
    Ok(())
}

/// The schema whose `_sqlx_migrations` records tasklatch's first migration, when `schema` has
/// no history of its own.
async fn installed_elsewhere(
    conn: &mut sqlx::PgConnection,
    schema: &SchemaName,
) -> Result<Option<String>, MigrateError> {
    let has_history: bool = sqlx::query_scalar(sql::HISTORY_EXISTS)
        .bind(schema.as_str())
        .fetch_one(&mut *conn)
        .await?;
    if has_history {
        return Ok(None);
    }
    let Some(first) = MIGRATOR.iter().find(|m| m.migration_type.is_up_migration()) else {
        return Ok(None);
    };
    let others: Vec<String> = sqlx::query_scalar(sql::MIGRATION_HISTORIES)
        .bind(schema.as_str())
        .fetch_all(&mut *conn)
        .await?;
    for other in others {
        let table = format!("\"{}\"._sqlx_migrations", other.replace('"', "\"\""));
        let query = sql::HISTORY_RECORDS.replace("HISTORY", &table);
        let recorded: bool = sqlx::query_scalar(sqlx::AssertSqlSafe(query))
            .bind(first.version)
            .bind(&*first.checksum)
            .fetch_one(&mut *conn)
            .await?;
        if recorded {
            return Ok(Some(other));
        }
    }
    Ok(None)
}
