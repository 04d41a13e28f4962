//! `tasklatch migrate`: applies the schema (`tasklatch_pg::migrate`).

use super::out;
use clap::Args;
use sqlx::postgres::PgPoolOptions;
use std::process::ExitCode;
use std::time::Duration;
use tasklatch_pg::{open_primary, Host, SchemaName, SessionSettings};
use tasklatch_worker::config::DATABASE_URL_ENV;

/// Arguments of `tasklatch migrate`.
#[derive(Args)]
pub struct MigrateArgs {
    /// The database to migrate (default: $TASKLATCH_DATABASE_URL). Prefer the variable when the
    /// URL holds a password: a command line is visible to every user of the host.
    #[arg(long)]
    database_url: Option<String>,
    /// Servers to find the primary among, comma-separated `host:port` (`[address]:port` for
    /// IPv6; port 5432 when left out), asked in order: the first that takes writes is migrated.
    /// Each replaces the URL's host and port; the URL gives the user, password and database.
    /// Default: the URL's own host.
    #[arg(long, value_delimiter = ',', value_name = "HOST:PORT,...")]
    database_hosts: Vec<String>,
    /// The schema tasklatch lives in (created if missing; its tables, functions and migration
    /// history `<schema>._sqlx_migrations`). The workers' `database.schema` must name the same.
    #[arg(long, default_value = tasklatch_pg::DEFAULT_SCHEMA)]
    schema: String,
}

/// Applies every pending migration into the schema of the database named by `--database-url`,
/// else by `$TASKLATCH_DATABASE_URL` (an error names both when neither is given), on the
/// primary of `--database-hosts` when given.
pub fn run_cli(args: MigrateArgs) -> anyhow::Result<ExitCode> {
    let schema = SchemaName::new(&args.schema).map_err(|e| anyhow::anyhow!("--schema: {e}"))?;
    let url = args
        .database_url
        .or_else(|| std::env::var(DATABASE_URL_ENV).ok())
        .ok_or_else(|| anyhow::anyhow!("give --database-url or ${DATABASE_URL_ENV}"))?;
    // The parser's message may quote the URL (and its password): not passed on.
    let options = url
        .parse()
        .map_err(|_| anyhow::anyhow!("the database URL is not a valid PostgreSQL URL"))?;
    let hosts = hosts_of(&args.database_hosts)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let session = SessionSettings {
            schema: schema.clone(),
            ..SessionSettings::default()
        };
        let pool = PgPoolOptions::new()
            .max_connections(1)
            .acquire_timeout(CONNECT_WITHIN);
        let pool = open_primary(pool, session.apply(options), &session, &hosts).await?;
        let result = tasklatch_pg::migrate(&pool, &schema).await;
        pool.close().await;
        result?;
        let applied = tasklatch_pg::MIGRATOR.iter().count();
        out::line(format_args!(
            "migrated schema {schema}: {applied} migrations applied or already present"
        ))?;
        anyhow::Ok(ExitCode::SUCCESS)
    })
}

/// How long a server that refuses connections (starting up, or a failover under way) is waited
/// for.
const CONNECT_WITHIN: Duration = Duration::from_secs(30);

/// `--database-hosts` (none: the URL's host).
pub fn hosts_of(entries: &[String]) -> anyhow::Result<Vec<Host>> {
    if entries.is_empty() {
        return Ok(Vec::new());
    }
    Host::parse_list(entries).map_err(|e| anyhow::anyhow!("--database-hosts: {e}"))
}
