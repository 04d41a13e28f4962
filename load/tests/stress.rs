//! A small stress run with chaos (4 engines, 300 tasks): engines aborted mid-call, backends
//! killed one at a time and all at once (a database restart), 409/404/launch errors/slow and
//! failed runs — and nothing lost, duplicated or
//! unexpected, judged from the doubles' records.

use tasklatch_load::stress::{run, StressConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_stress_with_chaos_loses_and_duplicates_nothing() {
    let mut config = StressConfig::new(4, 300);
    config.chaos = true;
    config.seed = 7;
    let report = run(config, |p| eprintln!("{}", p.line()))
        .await
        .expect("stress runs");
    eprintln!("{}\n{report:#?}", report.line());
    assert!(report.settled, "everything settled: {report:#?}");
    assert!(
        report.passed(),
        "{}\n{:#?}",
        report.line(),
        report.verdict.examples
    );
    assert!(
        report.verdict.delivered >= 300 - report.verdict.exempt,
        "{report:#?}"
    );
    assert!(report.aborts + report.kills > 0, "chaos happened");
    assert!(
        report.restarts > 0,
        "every backend was killed at once at least once (a database restart)"
    );
}

/// The verdict has teeth: with the ledger's uniqueness dropped, a launch that fails after the
/// run was created is retried with the same key and creates a second run — duplicated.
#[cfg(feature = "mutations")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stress_catches_a_ledger_without_unique_keys() {
    let mut config = StressConfig::new(2, 200);
    config.seed = 11;
    config.launch.fail_after = 0.3;
    config.mutant = Some(tasklatch_core::mutation::Mutant::LedgerUniquenessDropped);
    let report = run(config, |_| {}).await.expect("stress runs");
    eprintln!("{}", report.line());
    assert!(report.verdict.duplicated > 0, "{report:#?}");
    assert!(!report.passed());
}
