//! Is the database's schema the one this worker was built for?
//!
//! `tasklatch migrate` is the way to create and update the schema; the worker never migrates
//! by itself (two versions of the worker starting at once must not race to change it). It
//! compares the migrations compiled into it (`tasklatch_pg::MIGRATOR`) with the ones recorded
//! as applied in sqlx's `_sqlx_migrations` table of the configured schema (the pool's
//! connections have it as their `search_path`, so the unqualified name means exactly that
//! table, never a host application's), and refuses to start on a schema that is
//! behind. A schema that is ahead (a newer worker migrated it) is reported; the worker runs, as
//! migrations only ever add.

use sqlx::PgPool;
use std::collections::BTreeSet;

/// The schema compared with the migrations this binary knows.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum SchemaState {
    /// Every known migration is applied, and nothing else.
    Current,
    /// Some known migrations are not applied (or none: an empty database).
    Behind {
        /// Known migrations applied.
        applied: usize,
        /// Migrations this binary knows.
        known: usize,
    },
    /// Every known migration is applied, and newer ones too.
    Ahead {
        /// Applied migrations this binary does not know.
        unknown: usize,
    },
    /// A migration failed midway and was left recorded as unsuccessful.
    Dirty(i64),
}

impl SchemaState {
    /// Whether the worker may run on it.
    pub fn runnable(&self) -> bool {
        matches!(self, SchemaState::Current | SchemaState::Ahead { .. })
    }

    /// What an operator reads when the worker refuses to start.
    pub fn explain(&self) -> String {
        match self {
            SchemaState::Current => "the database schema is current".into(),
            SchemaState::Behind { applied, known } => format!(
                "the database schema is behind this worker ({applied} of {known} migrations \
                 applied): run `tasklatch migrate --database-url … --schema …` first"
            ),
            SchemaState::Ahead { unknown } => format!(
                "the database schema has {unknown} migrations this worker does not know (a newer \
                 version migrated it)"
            ),
            SchemaState::Dirty(version) => format!(
                "migration {version} failed midway and is recorded as unsuccessful: repair the \
                 schema, then run `tasklatch migrate --database-url …`"
            ),
        }
    }
}

/// Reads the applied migrations and compares them with `tasklatch_pg::MIGRATOR`.
pub async fn check(pool: &PgPool) -> Result<SchemaState, sqlx::Error> {
    let table: Option<String> = sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations')::text")
        .fetch_one(pool)
        .await?;
    let rows: Vec<(i64, bool)> = if table.is_some() {
        sqlx::query_as("SELECT version, success FROM _sqlx_migrations")
            .fetch_all(pool)
            .await?
    } else {
        Vec::new()
    };
    let known: BTreeSet<i64> = tasklatch_pg::MIGRATOR
        .iter()
        .filter(|m| m.migration_type.is_up_migration())
        .map(|m| m.version)
        .collect();
    Ok(compare(&known, &rows))
}

fn compare(known: &BTreeSet<i64>, rows: &[(i64, bool)]) -> SchemaState {
    if let Some((version, _)) = rows.iter().find(|(_, ok)| !ok) {
        return SchemaState::Dirty(*version);
    }
    let applied: BTreeSet<i64> = rows.iter().map(|(v, _)| *v).collect();
    let missing = known.difference(&applied).count();
    if missing > 0 {
        return SchemaState::Behind {
            applied: known.len() - missing,
            known: known.len(),
        };
    }
    match applied.difference(known).count() {
        0 => SchemaState::Current,
        unknown => SchemaState::Ahead { unknown },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_tells_current_behind_ahead_and_dirty() {
        let known: BTreeSet<i64> = [1, 2, 3].into();
        let ok = |vs: &[i64]| vs.iter().map(|v| (*v, true)).collect::<Vec<_>>();
        assert_eq!(compare(&known, &ok(&[1, 2, 3])), SchemaState::Current);
        assert_eq!(
            compare(&known, &ok(&[1])),
            SchemaState::Behind {
                applied: 1,
                known: 3
            }
        );
        assert_eq!(
            compare(&known, &[]),
            SchemaState::Behind {
                applied: 0,
                known: 3
            }
        );
        assert_eq!(
            compare(&known, &ok(&[1, 2, 3, 4])),
            SchemaState::Ahead { unknown: 1 }
        );
        assert_eq!(
            compare(&known, &[(1, true), (2, false)]),
            SchemaState::Dirty(2)
        );
        assert!(SchemaState::Behind {
            applied: 0,
            known: 3
        }
        .explain()
        .contains("tasklatch migrate"));
    }
}
