//! The operator views: `tasklatch tasks list|show|cancel --owner O --thread T` (the API's
//! scoped calls) and `tasklatch dead-letters list` (`tasklatch_worker::ops`). The database is
//! `--database-url`, else `$TASKLATCH_DATABASE_URL`, else the `[database]` of `--config`.
//! (`dead-letters requeue` needs a store operation that does not exist yet.)

use anyhow::Context;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use tasklatch_core::ids::{OwnerId, TaskId, ThreadId};
use tasklatch_core::policy::Policy;
use tasklatch_core::store::{CancelTarget, Scope};
use tasklatch_pg::PgStore;
use tasklatch_worker::config::DATABASE_URL_ENV;
use tasklatch_worker::ops;

/// Where the store is.
#[derive(Args)]
pub struct Database {
    /// The database (default: $TASKLATCH_DATABASE_URL, then --config).
    #[arg(long, global = true)]
    database_url: Option<String>,
    /// A worker configuration file to take the database (and timings) from.
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    /// The schema tasklatch lives in, with --database-url or $TASKLATCH_DATABASE_URL (a
    /// configuration file names its own: database.schema).
    #[arg(long, global = true, default_value = tasklatch_pg::DEFAULT_SCHEMA)]
    schema: String,
}

/// Whose tasks.
#[derive(Args)]
struct Who {
    /// The owner.
    #[arg(long)]
    owner: String,
    /// The thread.
    #[arg(long)]
    thread: String,
}

/// Arguments of `tasklatch tasks`.
#[derive(Args)]
pub struct TasksArgs {
    #[command(subcommand)]
    command: TasksCommand,
    #[command(flatten)]
    database: Database,
}

#[derive(Subcommand)]
enum TasksCommand {
    /// The owner's tasks in the thread, newest first.
    List {
        #[command(flatten)]
        who: Who,
        /// At most this many.
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// One task's detail (the API's whitelisted view).
    Show {
        #[command(flatten)]
        who: Who,
        /// The task id.
        #[arg(long)]
        id: String,
    },
    /// Request a cancel, by id or by name.
    Cancel {
        #[command(flatten)]
        who: Who,
        /// The task id.
        #[arg(long, conflicts_with = "name", required_unless_present = "name")]
        id: Option<String>,
        /// The name of one of the owner's active tasks in the thread.
        #[arg(long)]
        name: Option<String>,
    },
}

/// Arguments of `tasklatch dead-letters`.
#[derive(Args)]
pub struct DeadLettersArgs {
    #[command(subcommand)]
    command: DeadLettersCommand,
    #[command(flatten)]
    database: Database,
}

#[derive(Subcommand)]
enum DeadLettersCommand {
    /// Every notification and cancel dead letter (reads the whole table in pages).
    List {
        /// At most this many.
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
    /// Delivers a dead-lettered notification again: the task's latest event becomes a new
    /// version with a fresh failure budget (a cancel dead letter is not requeued). Exit code 1
    /// when nothing was requeued.
    Requeue {
        /// The task id (`tsk_…`), as `dead-letters list` prints it.
        #[arg(long)]
        id: String,
    },
}

fn scope(who: Who) -> Scope {
    Scope {
        owner: OwnerId::from(who.owner),
        thread: ThreadId::from(who.thread),
    }
}

/// Runs a `tasks` subcommand; exit code 1 when the task is not found.
pub fn run_tasks(args: TasksArgs) -> anyhow::Result<ExitCode> {
    with_store(&args.database, |store| async move {
        let (text, found) = match args.command {
            TasksCommand::List { who, limit } => {
                (ops::list(&store, &scope(who), limit).await?, true)
            }
            TasksCommand::Show { who, id } => {
                match ops::show(&store, &scope(who), &TaskId::from(id)).await? {
                    Some(text) => (text, true),
                    None => ("not found in this owner's thread".to_owned(), false),
                }
            }
            TasksCommand::Cancel { who, id, name } => {
                let target = match (id, name) {
                    (Some(id), _) => CancelTarget::Id(TaskId::from(id)),
                    (None, Some(name)) => CancelTarget::Name(name),
                    (None, None) => anyhow::bail!("--id or --name is required"),
                };
                (ops::cancel(&store, &scope(who), &target).await?, true)
            }
        };
        println!("{}", text.trim_end());
        Ok(if found {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        })
    })
}

/// Runs a `dead-letters` subcommand.
pub fn run_dead_letters(args: DeadLettersArgs) -> anyhow::Result<ExitCode> {
    with_store(&args.database, |store| async move {
        let (text, done) = match args.command {
            DeadLettersCommand::List { limit } => (ops::dead_letters(&store, limit).await?, true),
            DeadLettersCommand::Requeue { id } => ops::requeue(&store, &TaskId::from(id)).await?,
        };
        println!("{}", text.trim_end());
        Ok(if done {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        })
    })
}

fn with_store<F, Fut>(db: &Database, f: F) -> anyhow::Result<ExitCode>
where
    F: FnOnce(PgStore) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<ExitCode>>,
{
    let (options, policy) = database_of(db)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(2)
            .acquire_timeout(std::time::Duration::from_secs(10))
            .connect_with(options)
            .await
            .context("cannot connect to the database")?;
        tasklatch_worker::run::check_schema(&pool).await?;
        let code = f(PgStore::new(pool.clone(), policy)).await;
        pool.close().await;
        code
    })
}

fn database_of(db: &Database) -> anyhow::Result<(sqlx::postgres::PgConnectOptions, Policy)> {
    let url = db
        .database_url
        .clone()
        .or_else(|| std::env::var(DATABASE_URL_ENV).ok());
    if let Some(url) = url {
        // The parser's message may quote the URL (and its password): not passed on.
        let options = url
            .parse()
            .map_err(|_| anyhow::anyhow!("the database URL is not a valid PostgreSQL URL"))?;
        let session = tasklatch_pg::SessionSettings {
            schema: tasklatch_pg::SchemaName::new(&db.schema)
                .map_err(|e| anyhow::anyhow!("--schema: {e}"))?,
            ..tasklatch_pg::SessionSettings::default()
        };
        return Ok((session.apply(options), Policy::default()));
    }
    let path = db
        .config
        .as_ref()
        .context("give --database-url, $TASKLATCH_DATABASE_URL or --config")?;
    let settings = tasklatch_worker::config::load(path, &|k| std::env::var(k).ok())?;
    Ok((settings.database.options, settings.policy))
}
