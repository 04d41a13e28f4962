//! `tasklatch migrate`: applies the schema (`tasklatch_pg::migrate`).

use clap::Args;
use std::process::ExitCode;

/// Arguments of `tasklatch migrate`.
#[derive(Args)]
pub struct MigrateArgs {
    /// The database to migrate.
    #[arg(long)]
    database_url: String,
}

/// Applies every pending migration.
pub fn run_cli(args: MigrateArgs) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let pool = tasklatch_pg::connect(&args.database_url, 1).await?;
        tasklatch_pg::migrate(&pool).await?;
        let applied = tasklatch_pg::MIGRATOR.iter().count();
        println!("migrated: {applied} migrations applied or already present");
        pool.close().await;
        anyhow::Ok(ExitCode::SUCCESS)
    })
}
