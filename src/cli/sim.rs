//! `tasklatch sim`: simulation campaigns, single-seed replays and the mutant table.

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use std::ops::Range;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tasklatch_core::mutation::Mutant;
use tasklatch_sim::backend::Backend;
use tasklatch_sim::campaign::{
    run_campaign, run_plan, BackendFactory, CampaignOptions, CampaignReport, Progress,
};
use tasklatch_sim::ctx::sim_policy;
use tasklatch_sim::generate::{generate, Knobs};
use tasklatch_sim::plan::Plan;
use tasklatch_sim::world::RunOptions;

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
    after_help = "Examples:\n  tasklatch sim --seeds 0..500\n  tasklatch sim --seed 42 --trace t.jsonl\n  tasklatch sim --store pg --seeds 0..50\n  cargo run --release --features mutations -- sim --mutants --seeds 0..200"
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
    /// Switch on one planted bug (needs a build with `--features mutations`).
    #[arg(long)]
    mutant: Option<Mutant>,
    /// Run the campaign once per planted bug and print which were caught.
    #[arg(long, requires = "seeds")]
    mutants: bool,
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
    /// Write a Markdown summary of the campaign.
    #[arg(long, requires = "seeds")]
    summary: Option<std::path::PathBuf>,
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
    let factory = backend_factory(&args)?;
    let run_opts = RunOptions {
        tick: Duration::from_millis(args.tick_ms),
        ..RunOptions::default()
    };
    if args.mutants {
        return mutant_table(&args, factory, run_opts);
    }
    if let Some(seeds) = args.seeds.clone() {
        let opts = campaign_options(&args, seeds, run_opts, args.mutant, false);
        let report = campaign(&opts, factory, args.quiet)?;
        if let Some(path) = &args.summary {
            let command = std::env::args().collect::<Vec<_>>().join(" ");
            let md = tasklatch_sim::summary::markdown(&report, &command, &|seed| {
                replay_command(&args, seed, args.mutant)
            });
            std::fs::write(path, md)
                .with_context(|| format!("cannot write summary {}", path.display()))?;
        }
        return Ok(print_campaign(&args, &report));
    }
    if let Some(path) = &args.replay_trace {
        return replay_trace(&args, path, factory, &run_opts);
    }
    let plan = match (&args.plan, args.seed) {
        (Some(path), _) => load_plan(path)?,
        (None, Some(seed)) => generate(seed, &knobs(&args)),
        (None, None) => {
            bail!("say what to run: --seeds A..B, --seed S or --plan FILE (see --help)")
        }
    };
    if args.shrink {
        return shrink(&args, plan, factory, run_opts);
    }
    replay(&args, &plan, factory, &run_opts)
}

fn replay_trace(
    args: &SimArgs,
    path: &std::path::Path,
    factory: BackendFactory,
    opts: &RunOptions,
) -> anyhow::Result<ExitCode> {
    let trace = tasklatch_sim::trace::read(path).map_err(|e| anyhow::anyhow!(e))?;
    let backend = factory(args.mutant).map_err(|e| anyhow::anyhow!(e))?;
    let out = run_plan(&trace.plan, backend, opts, args.mutant);
    println!(
        "trace {}: {} events, recorded history sha256: {}",
        path.display(),
        trace.entries.len(),
        trace.hash
    );
    println!(
        "replayed: {} events, history sha256: {}",
        out.entries.len(),
        out.hash
    );
    for v in &out.verdict.violations {
        println!("VIOLATION {v}");
    }
    if out.hash != trace.hash {
        println!("the replay does NOT reproduce the trace (different engine, store or flags?)");
        return Ok(ExitCode::FAILURE);
    }
    println!(
        "the replay reproduces the trace exactly; {}",
        if out.verdict.passed() {
            "passed"
        } else {
            "FAILED"
        }
    );
    Ok(if out.verdict.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn shrink(
    args: &SimArgs,
    plan: Plan,
    factory: BackendFactory,
    run: RunOptions,
) -> anyhow::Result<ExitCode> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = args.threads.map_or(cores, |t| t as usize);
    let opts = tasklatch_sim::shrink::ShrinkOptions {
        max_runs: args.shrink_runs,
        threads,
        run,
        mutant: args.mutant,
    };
    let bar = if args.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(opts.max_runs as u64)
    };
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} runs {msg} [{elapsed}]")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let original = plan.clone();
    let progress = |p: tasklatch_sim::shrink::ShrinkProgress| {
        bar.set_position(p.runs as u64);
        bar.set_message(format!("| now {} faults, {} tasks", p.faults, p.tasks));
    };
    let result = tasklatch_sim::shrink::shrink(plan, factory, &opts, &progress)
        .map_err(|e| anyhow::anyhow!(e))?;
    bar.finish_and_clear();
    let out = args
        .shrink_out
        .clone()
        .unwrap_or_else(|| format!("shrunk-{}.json", original.seed).into());
    std::fs::write(&out, result.plan.to_json() + "\n")
        .with_context(|| format!("cannot write {}", out.display()))?;
    println!("{}", result.plan.to_json());
    println!(
        "shrunk in {} runs: faults {} -> {}, tasks {} -> {}, user actions {} -> {}, workers {} -> {}",
        result.runs,
        original.faults.len(),
        result.plan.faults.len(),
        original.tasks.len(),
        result.plan.tasks.len(),
        original.user.len(),
        result.plan.user.len(),
        original.workers,
        result.plan.workers
    );
    println!(
        "fails with: {} ({})",
        result.fingerprint.invariant, result.fingerprint.shape
    );
    if let Some(name) = &args.save_fixture {
        let path = std::path::PathBuf::from(format!("fixtures/regressions/{name}.json"));
        let fixture = tasklatch_sim::fixture::Fixture {
            description: format!(
                "shrunk from seed {}: {} ({})",
                original.seed, result.fingerprint.invariant, result.fingerprint.shape
            ),
            mutant: args.mutant.map(|m| m.to_string()),
            invariant: Some(result.fingerprint.invariant.to_string()),
            plan: result.plan.clone(),
        };
        fixture.write(&path).map_err(|e| anyhow::anyhow!(e))?;
        println!("fixture: {}", path.display());
    }
    let mut cmd = format!(
        "{} --plan {}",
        if args.mutant.is_some() {
            "cargo run --release --features mutations -- sim"
        } else {
            "tasklatch sim"
        },
        out.display()
    );
    if args.store == StoreKind::Pg {
        cmd.push_str(" --store pg");
    }
    if let Some(m) = args.mutant {
        cmd.push_str(&format!(" --mutant {m}"));
    }
    println!("replay: {cmd}");
    Ok(ExitCode::SUCCESS)
}

/// A plan file, or a regression fixture (whose `plan` field is replayed).
fn load_plan(path: &std::path::Path) -> anyhow::Result<Plan> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read plan file {}", path.display()))?;
    let is_fixture =
        serde_json::from_str::<serde_json::Value>(&text).is_ok_and(|v| v.get("plan").is_some());
    if is_fixture {
        return Ok(tasklatch_sim::fixture::Fixture::read(path)
            .map_err(|e| anyhow::anyhow!(e))?
            .plan);
    }
    Plan::from_json(&text).map_err(|e| anyhow::anyhow!("plan file {}: {e}", path.display()))
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
    }
}

fn backend_factory(args: &SimArgs) -> anyhow::Result<BackendFactory> {
    match args.store {
        StoreKind::Mem => Ok(Arc::new(|_| Ok(Backend::memory(sim_policy())))),
        StoreKind::Pg => {
            if let Some(url) = &args.database_url {
                // Read once by the test-database harness; set before any thread starts.
                std::env::set_var("DATABASE_URL", url);
            }
            Ok(Arc::new(|mutant| Backend::postgres(sim_policy(), mutant)))
        }
    }
}

fn campaign_options(
    args: &SimArgs,
    seeds: Range<u64>,
    run: RunOptions,
    mutant: Option<Mutant>,
    stop: bool,
) -> CampaignOptions {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = args.threads.map_or(cores, |t| t as usize);
    let threads = if args.store == StoreKind::Pg {
        threads.min(cores)
    } else {
        threads
    };
    CampaignOptions {
        seeds,
        knobs: knobs(args),
        run,
        threads,
        mutant,
        stop_at_first_failure: stop,
    }
}

fn campaign(
    opts: &CampaignOptions,
    factory: BackendFactory,
    quiet: bool,
) -> anyhow::Result<CampaignReport> {
    let total = opts.seeds.end - opts.seeds.start;
    let bar = if quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(total)
    };
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} seeds {msg} [{elapsed}]")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let started = std::time::Instant::now();
    let on_progress = |p: Progress| {
        let speed = p.sim_secs / started.elapsed().as_secs_f64().max(1e-9);
        bar.set_position(p.done);
        bar.set_message(format!("| {} failed | {speed:.0} sim-s/s", p.failed));
    };
    let report = run_campaign(opts, factory, &on_progress).map_err(|e| anyhow::anyhow!(e))?;
    bar.finish_and_clear();
    Ok(report)
}

fn replay_command(args: &SimArgs, seed: u64, mutant: Option<Mutant>) -> String {
    let mut cmd = String::from(if mutant.is_some() {
        "cargo run --release --features mutations -- sim"
    } else {
        "tasklatch sim"
    });
    cmd.push_str(&format!(" --seed {seed}"));
    if args.store == StoreKind::Pg {
        cmd.push_str(" --store pg");
    }
    if let Some(w) = args.workers {
        cmd.push_str(&format!(" --workers {w}"));
    }
    if let Some(t) = args.tasks {
        cmd.push_str(&format!(" --tasks {t}"));
    }
    if let Some(m) = mutant {
        cmd.push_str(&format!(" --mutant {m}"));
    }
    cmd
}

fn print_campaign(args: &SimArgs, report: &CampaignReport) -> ExitCode {
    let n = report.results.len();
    let wall = report.wall.as_secs_f64().max(1e-9);
    println!("fault and feature coverage (seeds where it took effect):");
    for (kind, count) in report.coverage() {
        println!(
            "  {kind:<36} {count:>6}  {:>5.1}%",
            100.0 * count as f64 / n.max(1) as f64
        );
    }
    println!(
        "speed: {:.0} simulated seconds per wall second, {:.2} seeds per second ({} seeds in {:.1} s)",
        report.sim_secs() / wall,
        n as f64 / wall,
        n,
        wall
    );
    let failures: Vec<_> = report.failures().collect();
    for f in &failures {
        if let Some(v) = &f.violation {
            println!(
                "FAILED seed {}: {v}\n  replay: {}",
                f.seed,
                replay_command(args, f.seed, args.mutant)
            );
        }
    }
    println!("{} passed, {} failed", n - failures.len(), failures.len());
    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn replay(
    args: &SimArgs,
    plan: &Plan,
    factory: BackendFactory,
    opts: &RunOptions,
) -> anyhow::Result<ExitCode> {
    if args.print_plan {
        println!("{}", plan.to_json());
    }
    let backend = factory(args.mutant).map_err(|e| anyhow::anyhow!(e))?;
    let out = run_plan(plan, backend, opts, args.mutant);
    if let Some(path) = &args.trace {
        tasklatch_sim::trace::write(path, &out.entries)
            .with_context(|| format!("cannot write trace {}", path.display()))?;
        println!("trace: {} ({} events)", path.display(), out.entries.len());
    }
    if let Some(path) = &args.report {
        let html = tasklatch_sim::report::render(plan, &out.entries, &out.verdict, &out.hash);
        std::fs::write(path, html)
            .with_context(|| format!("cannot write report {}", path.display()))?;
        println!("report: {}", path.display());
    }
    let c = &out.verdict.counts;
    println!(
        "seed {}: {} workers, {} tasks, {} faults; {:.0} simulated seconds in {:.2} s",
        plan.seed,
        plan.workers,
        plan.tasks.len(),
        plan.faults.len(),
        out.sim_elapsed.as_secs_f64(),
        out.wall.as_secs_f64()
    );
    println!(
        "delivered={} lost={} duplicated={} unexpected={} noisy={} fenced_refused={} dead_letters: thread_gone={} budget={} cancel={}",
        c.delivered, c.lost, c.duplicated, c.unexpected, c.noisy, c.fenced_refused, c.dead_thread_gone, c.dead_budget, c.dead_cancel
    );
    for v in &out.verdict.violations {
        println!("VIOLATION {v}");
    }
    println!(
        "{}",
        if out.verdict.passed() {
            "passed"
        } else {
            "FAILED"
        }
    );
    println!("history sha256: {}", out.hash);
    Ok(if out.verdict.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn mutant_table(
    args: &SimArgs,
    factory: BackendFactory,
    run_opts: RunOptions,
) -> anyhow::Result<ExitCode> {
    let Some(seeds) = args.seeds.clone() else {
        bail!("--mutants needs --seeds A..B")
    };
    let mutants: Vec<Mutant> = match args.mutant {
        Some(m) => vec![m],
        None if args.store == StoreKind::Pg => Mutant::ALL
            .iter()
            .copied()
            .filter(|m| m.lives_in_sql())
            .collect(),
        None => Mutant::ALL.to_vec(),
    };
    println!(
        "{:<38} {:<7} {:<12} invariant",
        "mutant", "caught", "first seed"
    );
    let mut caught = 0;
    for m in &mutants {
        let opts = campaign_options(args, seeds.clone(), run_opts.clone(), Some(*m), true);
        let report = campaign(&opts, factory.clone(), args.quiet)?;
        let first = report.failures().next();
        match first.and_then(|f| f.violation.as_ref().map(|v| (f.seed, v))) {
            Some((seed, v)) => {
                caught += 1;
                println!("{:<38} {:<7} {:<12} {}", m.name(), "yes", seed, v.invariant);
            }
            None => println!("{:<38} {:<7} {:<12} -", m.name(), "NO", "-"),
        }
    }
    println!("{caught}/{} mutants caught", mutants.len());
    Ok(if caught == mutants.len() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
