//! `tasklatch sim`: simulation campaigns, single-seed replays and the mutant table.

use anyhow::{bail, Error};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use std::ops::Range;
use std::process::ExitCode;
use std::time::Duration;
use tasklatch_core::mutation::Mutant;
use tasklatch_sim::campaign::replay_command::ReplayCommand;
use tasklatch_sim::campaign::shard::Shard;
use tasklatch_sim::campaign::shrink::{ShrinkOptions, ShrinkProgress};
use tasklatch_sim::campaign::{self, run_campaign, run_plan, BackendFactory, CampaignOptions};
use tasklatch_sim::campaign::{fixture, merge, mutants, replay, summary};
use tasklatch_sim::campaign::{CampaignReport, Progress};
use tasklatch_sim::plan::GatewayMode;
use tasklatch_sim::plan::Plan;
use tasklatch_sim::plan::{generate, Knobs};
use tasklatch_sim::run::RunOptions;

/// Where the simulated `db` host keeps its rows.
#[derive(Copy, Clone, PartialEq, Eq, Debug, ValueEnum)]
pub enum StoreKind {
    /// The in-memory model (the executable specification).
    Mem,
    /// Real Postgres through a blocking gateway thread; a fresh database per run.
    Pg,
}

/// Arguments of `tasklatch sim`.
///
/// Runs the deterministic simulation: a campaign over a range of seeds (`--seeds 0..500`), or a
/// replay of one seed (`--seed 42`) or of a plan file (`--plan p.json`). Each seed generates a
/// plan — tasks, remote scripts, user actions and timed faults — runs it through chaos and heal,
/// and checks the history against DOMAIN §9. The same seed always yields the same history hash.
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  tasklatch sim --seeds 0..500\n  tasklatch sim --seeds 0..20000 --shard 1/4 --summary shard1.md   (and 2/4 … on other machines)\n  tasklatch sim --merge-summaries shard1.json shard2.json shard3.json shard4.json --summary all.md\n  tasklatch sim --seed 42 --trace t.jsonl\n  tasklatch sim --store pg --seeds 0..50\n  cargo run --release --features mutations -- sim --mutants --seeds 0..200"
)]
pub struct SimArgs {
    /// Run a campaign over these seeds, `A..B` (B excluded).
    #[arg(long, value_parser = parse_range, conflicts_with_all = ["seed", "plan"])]
    seeds: Option<Range<u64>>,
    /// Replay one seed.
    #[arg(long, conflicts_with = "plan")]
    seed: Option<u64>,
    /// Replay a plan file (JSON, as printed by `--print-plan` or written by `--shrink`).
    #[arg(long)]
    plan: Option<std::path::PathBuf>,
    /// Where the `db` host keeps its rows.
    #[arg(long, value_enum, default_value_t = StoreKind::Mem)]
    store: StoreKind,
    /// Postgres server for `--store pg` (default: DATABASE_URL, else the local server, else a
    /// throwaway cluster).
    #[arg(long)]
    database_url: Option<String>,
    /// Worker hosts per run (default: drawn from the seed, 1 to 4).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=16))]
    workers: Option<u32>,
    /// Tasks per run (default: drawn from the seed, 6 to 14).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=500))]
    tasks: Option<u32>,
    /// Which launcher peer the `gateway` host plays: our idempotent run ledger, or a server
    /// that behaves like the LangGraph Agent Server (no idempotency; the workers' launcher
    /// looks the key up, creates, and looks again). A plan file carries its own mode.
    #[arg(long, default_value_t = GatewayMode::Ledger)]
    gateway: GatewayMode,
    /// Switch on one planted bug (needs a build with `--features mutations`).
    #[arg(long)]
    mutant: Option<Mutant>,
    /// Run the campaign once per planted bug and print which were caught.
    #[arg(long, requires = "seeds")]
    mutants: bool,
    /// With `--mutants`: run every seed for every planted bug (no stop at the first catch)
    /// and count the seeds that catch each; the footer gives the median first seed and the
    /// fewest catches (the zoo's figures; as many campaigns as bugs, each over all its seeds).
    #[arg(long, requires = "mutants")]
    catch_counts: bool,
    /// Parallel simulations (default: the number of cores).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=256))]
    threads: Option<u32>,
    /// Simulation tick in milliseconds.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=100))]
    tick_ms: u64,
    /// Write the replayed run's history as JSON lines (fields: at_us, host, task, kind, payload).
    #[arg(long)]
    trace: Option<std::path::PathBuf>,
    /// Write the replayed run as a self-contained HTML timeline (a lane per task and host).
    #[arg(long)]
    report: Option<std::path::PathBuf>,
    /// Replay the plan recorded in a trace file and check that the run reproduces it.
    #[arg(long, conflicts_with_all = ["seeds", "seed", "plan"])]
    replay_trace: Option<std::path::PathBuf>,
    /// Minimise the failing plan of `--seed` or `--plan` and write it to `--shrink-out`.
    #[arg(long)]
    shrink: bool,
    /// Where `--shrink` writes the minimal plan (default: shrunk-<seed>.json).
    #[arg(long, requires = "shrink")]
    shrink_out: Option<std::path::PathBuf>,
    /// Also save the minimal plan as a regression fixture (fixtures/regressions/<NAME>.json).
    #[arg(long, requires = "shrink")]
    save_fixture: Option<String>,
    /// At most this many simulation runs while shrinking.
    #[arg(long, default_value_t = 400, requires = "shrink")]
    shrink_runs: usize,
    /// Write a Markdown summary of the campaign (or of the merged records), and its JSON
    /// record beside it (the same path with `.json`), which `--merge-summaries` reads.
    #[arg(long)]
    summary: Option<std::path::PathBuf>,
    /// Run only shard K of N of the `--seeds` range (`--shard 2/4`): N contiguous, disjoint
    /// slices that together hold every seed once, one per machine; merge their records with
    /// `--merge-summaries`.
    #[arg(long, requires = "seeds", conflicts_with = "mutants")]
    shard: Option<Shard>,
    /// Merge the JSON records of one campaign's shards (written beside each `--summary`) into
    /// one summary: prints it like a campaign, writes `--summary` if given, fails if any seed
    /// failed. Refuses records of differently set-up runs and overlapping seeds.
    #[arg(long, num_args = 1.., value_name = "RECORD.json",
          conflicts_with_all = ["seeds", "seed", "plan", "replay_trace", "mutants"])]
    merge_summaries: Vec<std::path::PathBuf>,
    /// Print the replayed run's plan as JSON.
    #[arg(long)]
    print_plan: bool,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

fn parse_range(s: &str) -> Result<Range<u64>, String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("expected A..B, got {s:?}"))?;
    let a: u64 = a
        .trim()
        .parse()
        .map_err(|_| format!("{a:?} is not a seed number"))?;
    let b: u64 = b
        .trim()
        .parse()
        .map_err(|_| format!("{b:?} is not a seed number"))?;
    if b <= a {
        return Err(format!(
            "empty range {s:?}: the end must be greater than the start"
        ));
    }
    Ok(a..b)
}

/// Runs `tasklatch sim`.
pub fn run(args: SimArgs) -> anyhow::Result<ExitCode> {
    if args.mutant.is_some() || args.mutants {
        check_mutations_built()?;
    }
    let factory = backend_factory(&args);
    let run_opts = RunOptions {
        tick: Duration::from_millis(args.tick_ms),
        ..RunOptions::default()
    };
    if args.summary.is_some() && args.seeds.is_none() && args.merge_summaries.is_empty() {
        bail!("--summary needs a campaign (--seeds A..B) or records to merge (--merge-summaries)");
    }
    if !args.merge_summaries.is_empty() {
        return merge_summaries(&args);
    }
    if args.mutants {
        return mutant_table(&args, factory, run_opts);
    }
    if let Some(seeds) = args.seeds.clone() {
        return campaign_run(&args, seeds, factory, run_opts);
    }
    if let Some(path) = &args.replay_trace {
        let replayed =
            replay::replay_trace(path, &factory, &run_opts, args.mutant).map_err(Error::msg)?;
        print_lines(&replayed.lines);
        return Ok(exit(replayed.ok()));
    }
    let plan = match (&args.plan, args.seed) {
        (Some(path), _) => fixture::read_plan(path).map_err(Error::msg)?,
        (None, Some(seed)) => generate(seed, &knobs(&args)),
        (None, None) => {
            bail!("say what to run: --seeds A..B, --seed S or --plan FILE (see --help)")
        }
    };
    if args.shrink {
        return shrink(&args, plan, factory, run_opts);
    }
    replay_plan(&args, &plan, factory, &run_opts)
}

fn print_lines(lines: &[String]) {
    for line in lines {
        println!("{line}");
    }
}

fn exit(ok: bool) -> ExitCode {
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn shrink(
    args: &SimArgs,
    plan: Plan,
    factory: BackendFactory,
    run: RunOptions,
) -> anyhow::Result<ExitCode> {
    let opts = ShrinkOptions {
        max_runs: args.shrink_runs,
        threads: args.threads.map_or(campaign::cores(), |t| t as usize),
        run,
        mutant: args.mutant,
    };
    let bar = progress_bar(args.quiet, opts.max_runs as u64, "runs");
    let progress = |p: ShrinkProgress| {
        bar.set_position(p.runs as u64);
        bar.set_message(format!("| now {} faults, {} tasks", p.faults, p.tasks));
    };
    let result = tasklatch_sim::campaign::shrink::shrink(plan, factory, &opts, &progress)
        .map_err(Error::msg)?;
    bar.finish_and_clear();
    let out = args
        .shrink_out
        .clone()
        .unwrap_or_else(|| result.default_path());
    result.write_plan(&out).map_err(Error::msg)?;
    print_lines(&result.lines());
    if let Some(name) = &args.save_fixture {
        let path = result.save_fixture(name, args.mutant).map_err(Error::msg)?;
        println!("fixture: {}", path.display());
    }
    println!("replay: {}", replay_command(args).plan(&out));
    Ok(ExitCode::SUCCESS)
}

fn check_mutations_built() -> anyhow::Result<()> {
    if cfg!(feature = "mutations") {
        return Ok(());
    }
    bail!("planted bugs need a build with the `mutations` feature: cargo run --release --features mutations -- sim …")
}

fn knobs(args: &SimArgs) -> Knobs {
    Knobs {
        workers: args.workers,
        tasks: args.tasks,
        gateway: args.gateway,
    }
}

fn replay_command(args: &SimArgs) -> ReplayCommand {
    ReplayCommand {
        postgres: args.store == StoreKind::Pg,
        workers: args.workers,
        tasks: args.tasks,
        mutant: args.mutant,
        gateway: args.gateway,
    }
}

fn backend_factory(args: &SimArgs) -> BackendFactory {
    if let Some(url) = args
        .database_url
        .as_ref()
        .filter(|_| args.store == StoreKind::Pg)
    {
        // Read once by the test-database harness; set before any thread starts.
        std::env::set_var("DATABASE_URL", url);
    }
    campaign::backends(args.store == StoreKind::Pg)
}

fn campaign_options(
    args: &SimArgs,
    seeds: Range<u64>,
    run: RunOptions,
    mutant: Option<Mutant>,
    stop: bool,
) -> CampaignOptions {
    CampaignOptions {
        seeds,
        knobs: knobs(args),
        run,
        threads: campaign::threads(args.threads, args.store == StoreKind::Pg),
        mutant,
        stop_at_first_failure: stop,
    }
}

fn progress_bar(quiet: bool, len: u64, unit: &str) -> ProgressBar {
    let bar = if quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(len)
    };
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{{bar:30}} {{pos}}/{{len}} {unit} {{msg}} [{{elapsed}}]"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

fn campaign(
    opts: &CampaignOptions,
    factory: BackendFactory,
    quiet: bool,
) -> anyhow::Result<CampaignReport> {
    let bar = progress_bar(quiet, opts.seeds.end - opts.seeds.start, "seeds");
    let started = std::time::Instant::now();
    let on_progress = |p: Progress| {
        let speed = p.sim_secs / started.elapsed().as_secs_f64().max(1e-9);
        bar.set_position(p.done);
        bar.set_message(format!("| {} failed | {speed:.0} sim-s/s", p.failed));
    };
    let report = run_campaign(opts, factory, &on_progress).map_err(Error::msg)?;
    bar.finish_and_clear();
    Ok(report)
}

fn campaign_run(
    args: &SimArgs,
    seeds: Range<u64>,
    factory: BackendFactory,
    run: RunOptions,
) -> anyhow::Result<ExitCode> {
    let seeds = match args.shard {
        Some(shard) => {
            let slice = shard.seeds(seeds.clone());
            if slice.is_empty() {
                bail!(
                    "shard {shard} of {}..{} holds no seed: use fewer shards than seeds",
                    seeds.start,
                    seeds.end
                );
            }
            slice
        }
        None => seeds,
    };
    let opts = campaign_options(args, seeds, run, args.mutant, false);
    let report = campaign(&opts, factory, args.quiet)?;
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    summarise(args, &report, &[command], &replay_command(args))
}

/// Writes `--summary` (with its record) if asked, prints the campaign's lines, and exits
/// non-zero if any seed failed.
fn summarise(
    args: &SimArgs,
    report: &CampaignReport,
    commands: &[String],
    replay: &ReplayCommand,
) -> anyhow::Result<ExitCode> {
    if let Some(path) = &args.summary {
        summary::write(path, report, commands, replay).map_err(Error::msg)?;
    }
    print_lines(&summary::console(report, replay));
    Ok(exit(report.failures().next().is_none()))
}

fn merge_summaries(args: &SimArgs) -> anyhow::Result<ExitCode> {
    let records = args
        .merge_summaries
        .iter()
        .map(|path| merge::read(path).map(|r| (path.clone(), r)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(Error::msg)?;
    let merged = merge::merge(records).map_err(Error::msg)?;
    summarise(args, &merged.report, &merged.commands, &merged.replay)
}

fn replay_plan(
    args: &SimArgs,
    plan: &Plan,
    factory: BackendFactory,
    opts: &RunOptions,
) -> anyhow::Result<ExitCode> {
    if args.print_plan {
        println!("{}", plan.to_json());
    }
    let backend = factory(args.mutant).map_err(Error::msg)?;
    let out = run_plan(plan, backend, opts, args.mutant);
    if let Some(path) = &args.trace {
        println!("{}", replay::write_trace(path, &out).map_err(Error::msg)?);
    }
    if let Some(path) = &args.report {
        println!(
            "{}",
            replay::write_report(path, plan, &out).map_err(Error::msg)?
        );
    }
    print_lines(&replay::outcome_lines(plan, &out));
    Ok(exit(out.verdict.passed()))
}

fn mutant_table(
    args: &SimArgs,
    factory: BackendFactory,
    run_opts: RunOptions,
) -> anyhow::Result<ExitCode> {
    let Some(seeds) = args.seeds.clone() else {
        bail!("--mutants needs --seeds A..B")
    };
    let selection = mutants::selection(args.mutant, args.store == StoreKind::Pg);
    let stop = !args.catch_counts;
    println!("{}", mutants::header(args.catch_counts));
    let (mut caught, mut zoo) = (0, mutants::Zoo::default());
    for m in &selection {
        let mut opts = campaign_options(args, seeds.clone(), run_opts.clone(), Some(*m), stop);
        opts.knobs.gateway = mutants::gateway_for(*m, args.gateway);
        let report = campaign(&opts, factory.clone(), args.quiet)?;
        let (row, hit) = mutants::row(*m, &report);
        if args.catch_counts {
            println!("{row:<100} {}", zoo.add(*m, &report));
        } else {
            println!("{row}");
        }
        caught += usize::from(hit);
    }
    println!("{}", mutants::footer(caught, selection.len()));
    if args.catch_counts {
        println!("{}", zoo.summary(seeds.end - seeds.start));
    }
    Ok(exit(caught == selection.len()))
}
