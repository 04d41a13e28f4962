//! The operator views: `tasklatch tasks list|show|cancel --owner O --thread T` (the API's
//! scoped calls), `tasklatch tasks poll-now` (`tasklatch_worker::poll_now`, unscoped) and
//! `tasklatch dead-letters list|requeue` (`tasklatch_worker::ops`, unscoped).
//! The database is `--database-url`, else `$TASKLATCH_DATABASE_URL`, else the `[database]` of
//! `--config`; with `--database-hosts` (or the configuration's `database.hosts`) the host that
//! takes writes. Every connection is checked for the schema and timeouts (`open_checked`: a
//! pooler may drop them) and, with hosts, for writes. A database that cannot be reached is
//! named with the cause ([`tasklatch_pg::ConnectError`]). Output goes through [`out::line`]: `… | head -1` ends it
//! quietly.

use super::out;
use anyhow::Context;
use clap::{ArgGroup, Args, Subcommand, ValueEnum};
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use tasklatch_core::ids::{OwnerId, ServerId, TaskId, ThreadId};
use tasklatch_core::policy::Policy;
use tasklatch_core::ports::Clock;
use tasklatch_core::status::{DeadLetterReason, NotifyStatus, RemoteStatus};
use tasklatch_core::store::{CancelTarget, Scope};
use tasklatch_pg::PgStore;
use tasklatch_worker::clock::SystemClock;
use tasklatch_worker::config::DATABASE_URL_ENV;
use tasklatch_worker::ops::{self, DeadLetterFilter, DeadLetterKind};
use tasklatch_worker::{poll_now, task_search};

/// Where the store is.
#[derive(Args)]
pub struct Database {
    /// The database (default: $TASKLATCH_DATABASE_URL, then --config).
    #[arg(long, global = true)]
    database_url: Option<String>,
    /// With --database-url or $TASKLATCH_DATABASE_URL: servers to find the primary among,
    /// comma-separated `host:port` (port 5432 when left out), asked in order; each replaces the
    /// URL's host and port. (A configuration file names its own: database.hosts.)
    #[arg(
        long,
        global = true,
        value_delimiter = ',',
        value_name = "HOST:PORT,..."
    )]
    database_hosts: Vec<String>,
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
    /// One task's detail (the API's whitelisted view), or with --internal its operational state.
    Show {
        #[command(flatten)]
        who: Who,
        /// The task id.
        #[arg(long)]
        id: String,
        /// The operational state instead: server, next poll, errors, attempts, outages, dead
        /// letters, cancel work, answer, lease holders (never a remote id or a secret).
        #[arg(long)]
        internal: bool,
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
    /// Tasks across owners and threads, for operators: every task matching all of --status,
    /// --notification, --server, --owner and --older-than, in task id order. Reads the table in
    /// pages until --limit matches are found (a narrow filter on a large table reads more) and
    /// says how many rows it read.
    Search {
        /// Only tasks whose remote status is this (submitted, working, input_required,
        /// completed, failed, cancelled).
        #[arg(long, value_parser = parse_remote_status)]
        status: Option<RemoteStatus>,
        /// Only tasks whose notification is in this state (idle, pending, claimed, dispatched,
        /// retry, delivered, dead_letter).
        #[arg(long, value_parser = parse_notify_status)]
        notification: Option<NotifyStatus>,
        /// Only tasks on this MCP server (its id in the worker's configuration).
        #[arg(long)]
        server: Option<String>,
        /// Only this owner's tasks.
        #[arg(long)]
        owner: Option<String>,
        /// Only tasks created at least this long ago: a whole number and s, m, h or d (30m).
        #[arg(long, value_parser = task_search::parse_age)]
        older_than: Option<Duration>,
        /// At most this many (1 to 1000).
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u16).range(1..=1000))]
        limit: u16,
    },
    /// Polls tasks now instead of waiting out their backoff (after an MCP server's outage, say):
    /// every pollable task of one server (or of all), or with --backed-off-only only those whose
    /// polls failed, spread --spacing-ms apart so the server is not stampeded. Only the schedule
    /// changes; the running workers poll them. Tasks with a cancel in progress are left alone.
    PollNow {
        /// The MCP server id (as in `[servers.<id>]`).
        #[arg(
            long,
            conflicts_with = "all_servers",
            required_unless_present = "all_servers"
        )]
        server: Option<String>,
        /// Every server's tasks.
        #[arg(long)]
        all_servers: bool,
        /// Only tasks whose last poll failed.
        #[arg(long)]
        backed_off_only: bool,
        /// Milliseconds between two polls brought forward (at least 1).
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=60_000))]
        spacing_ms: u64,
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
    /// Requeues dead letters of both kinds, by task (--id) or in bulk (--all).
    ///
    /// A notification dead letter is delivered again: the task's latest event becomes a new
    /// version with a fresh failure budget. A cancel dead letter is requested again: the remote
    /// cancel is due now, with a fresh budget (a task that has finished meanwhile has nothing
    /// left to cancel and is skipped).
    ///
    /// --id requeues that task's notification and/or cancel dead letter and says, per kind,
    /// what it did. --all scans every task (in pages), takes the dead letters that match
    /// --kind, --reason and --server, prints how many, asks "requeue N dead letters? [y/N]"
    /// unless --yes is given (without --yes and with no terminal on stdin it refuses), then
    /// requeues each and prints how many were requeued and skipped. Exit code 1 when nothing
    /// was requeued.
    #[command(group(ArgGroup::new("target").required(true).args(["id", "all"])))]
    Requeue {
        /// One task (`tsk_…`, as `dead-letters list` prints it): its dead letters of both kinds
        /// (or of --kind).
        #[arg(long)]
        id: Option<String>,
        /// Every dead letter that matches the filters.
        #[arg(long)]
        all: bool,
        /// Only dead letters of this kind.
        #[arg(long, value_enum)]
        kind: Option<KindArg>,
        /// With --all: only dead letters given up for this reason (thread_gone, budget or
        /// unavailable).
        #[arg(long, requires = "all", value_parser = parse_reason)]
        reason: Option<DeadLetterReason>,
        /// With --all: only tasks on this MCP server (its id in the worker's configuration).
        #[arg(long, requires = "all")]
        server: Option<String>,
        /// With --all: do not ask for confirmation.
        #[arg(long, short = 'y', requires = "all")]
        yes: bool,
    },
}

/// A dead letter's kind, as `--kind` takes it.
#[derive(Copy, Clone, ValueEnum)]
enum KindArg {
    /// Notification dead letters.
    Notify,
    /// Cancel dead letters.
    Cancel,
}

impl From<KindArg> for DeadLetterKind {
    fn from(k: KindArg) -> Self {
        match k {
            KindArg::Notify => DeadLetterKind::Notify,
            KindArg::Cancel => DeadLetterKind::Cancel,
        }
    }
}

fn parse_reason(s: &str) -> Result<DeadLetterReason, String> {
    s.parse().map_err(|_| {
        let known: Vec<&str> = DeadLetterReason::ALL.iter().map(|r| r.as_str()).collect();
        format!(
            "not a dead-letter reason; expected one of {}",
            known.join(", ")
        )
    })
}

/// A remote status spelled as stored; an unknown one is refused with the valid spellings.
fn parse_remote_status(s: &str) -> Result<RemoteStatus, String> {
    let known = RemoteStatus::ALL.iter().map(|v| v.as_str());
    s.parse().map_err(|_| expected_one_of(known))
}

/// A notification state spelled as stored; an unknown one is refused with the valid spellings.
fn parse_notify_status(s: &str) -> Result<NotifyStatus, String> {
    let known = NotifyStatus::ALL.iter().map(|v| v.as_str());
    s.parse().map_err(|_| expected_one_of(known))
}

/// "expected one of a, b, c".
fn expected_one_of<'a>(known: impl Iterator<Item = &'a str>) -> String {
    format!("expected one of {}", known.collect::<Vec<_>>().join(", "))
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
            TasksCommand::Show { who, id, internal } => {
                let (scope, id) = (scope(who), TaskId::from(id));
                let shown = if internal {
                    ops::show_internal(&store, &scope, &id).await?
                } else {
                    ops::show(&store, &scope, &id).await?
                };
                match shown {
                    Some(text) => (text, true),
                    None => ("not found in this owner's thread".to_owned(), false),
                }
            }
            TasksCommand::Search {
                status,
                notification,
                server,
                owner,
                older_than,
                limit,
            } => {
                let filter = task_search::TaskFilter {
                    status,
                    notification,
                    server: server.map(ServerId::from),
                    owner: owner.map(OwnerId::from),
                    older_than,
                };
                let now = SystemClock.now();
                let found = task_search::search(&store, &filter, usize::from(limit), now);
                (found.await?, true)
            }
            TasksCommand::PollNow {
                server,
                all_servers: _,
                backed_off_only,
                spacing_ms,
            } => {
                let what = poll_now::PollNow {
                    server: server.map(ServerId::from),
                    backed_off_only,
                    spacing: Duration::from_millis(spacing_ms),
                };
                (poll_now::poll_now(&store, &what).await?.0, true)
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
        out::line(text.trim_end())?;
        Ok(if found {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        })
    })
}

/// Runs a `dead-letters` subcommand; exit code 1 when a requeue requeued nothing.
pub fn run_dead_letters(args: DeadLettersArgs) -> anyhow::Result<ExitCode> {
    with_store(&args.database, |store| async move {
        let done = match args.command {
            DeadLettersCommand::List { limit } => {
                out::line(ops::dead_letters(&store, limit).await?.trim_end())?;
                true
            }
            DeadLettersCommand::Requeue {
                id: Some(id), kind, ..
            } => {
                let id = TaskId::from(id);
                let (text, done) = ops::requeue(&store, &id, kind.map(Into::into)).await?;
                out::line(text.trim_end())?;
                done
            }
            DeadLettersCommand::Requeue {
                kind,
                reason,
                server,
                yes,
                ..
            } => {
                let filter = DeadLetterFilter {
                    kind: kind.map(Into::into),
                    reason,
                    server: server.map(ServerId::from),
                };
                requeue_all(&store, &filter, yes).await?
            }
        };
        Ok(if done {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        })
    })
}

/// `dead-letters requeue --all`: finds, confirms, requeues; whether anything was requeued.
async fn requeue_all(
    store: &PgStore,
    filter: &DeadLetterFilter,
    yes: bool,
) -> anyhow::Result<bool> {
    let (found, scanned) = ops::find_dead_letters(store, filter).await?;
    let cancels = found
        .iter()
        .filter(|d| d.kind == DeadLetterKind::Cancel)
        .count();
    out::line(format_args!(
        "{} dead letters match ({} notifications, {cancels} cancels; {scanned} tasks read)",
        found.len(),
        found.len() - cancels
    ))?;
    if found.is_empty() {
        out::line("nothing to requeue")?;
        return Ok(false);
    }
    if !yes && !confirmed(found.len())? {
        out::line("nothing requeued")?;
        return Ok(false);
    }
    let (tally, result) = ops::requeue_each(store, &found).await;
    out::line(tally.summary().trim_end())?;
    result?;
    Ok(tally.requeued() > 0)
}

/// Asks the operator on the terminal; refuses (an error) when stdin is not a terminal, so a
/// script without --yes never hangs or requeues by accident.
fn confirmed(n: usize) -> anyhow::Result<bool> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        anyhow::bail!(
            "not requeueing {n} dead letters: stdin is not a terminal to confirm on; \
             give --yes to requeue without asking"
        );
    }
    let mut stderr = std::io::stderr();
    write!(stderr, "requeue {n} dead letters? [y/N] ")?;
    stderr.flush()?;
    let mut answer = String::new();
    stdin.lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes"))
}

fn with_store<F, Fut>(db: &Database, f: F) -> anyhow::Result<ExitCode>
where
    F: FnOnce(PgStore) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<ExitCode>>,
{
    let target = database_of(db)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(2)
            .acquire_timeout(Duration::from_secs(10));
        let (options, session, hosts) = (target.options, target.session, target.hosts);
        let pool = tasklatch_pg::open_primary(pool, options, &session, &hosts).await?;
        tasklatch_worker::run::check_schema(&pool).await?;
        let code = f(PgStore::new(pool.clone(), target.policy)).await;
        pool.close().await;
        code
    })
}

/// Where the operator commands connect, and with what.
struct Target {
    /// The URL's options, `session` applied.
    options: sqlx::postgres::PgConnectOptions,
    /// The schema and timeouts every connection is checked for.
    session: tasklatch_pg::SessionSettings,
    /// The host list (empty: the URL's host).
    hosts: Vec<tasklatch_pg::Host>,
    /// The timings (the configuration's, else the defaults).
    policy: Policy,
}

fn database_of(db: &Database) -> anyhow::Result<Target> {
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
        return Ok(Target {
            options: session.apply(options),
            session,
            hosts: super::migrate::hosts_of(&db.database_hosts)?,
            policy: Policy::default(),
        });
    }
    let path = db
        .config
        .as_ref()
        .context("give --database-url, $TASKLATCH_DATABASE_URL or --config")?;
    if !db.database_hosts.is_empty() {
        anyhow::bail!("--database-hosts goes with --database-url; a configuration file names its own (database.hosts)");
    }
    let settings = tasklatch_worker::config::load(path, &|k| std::env::var(k).ok())?;
    let d = settings.database;
    Ok(Target {
        options: d.options,
        session: d.session,
        hosts: d.hosts,
        policy: settings.policy,
    })
}
