//! The overhead of owners in 16 bucket schemas against one schema on one server (issue 27 item
//! 6; `tasklatch_load::bench::buckets`), on a throwaway cluster. A measurement, not a check:
//! ignored by default, run with
//! `cargo test -p tasklatch-load --test buckets -- --ignored --nocapture` (figures in
//! `reports/scale-out.md`; the statements run in Postgres, the client is built at the test
//! profile's `opt-level = 1`); `BUCKETS_WORKERS=1` for one worker instead of 4. It fails only
//! when the runs do not deliver every row.

use tasklatch_load::bench::buckets::{run, BucketsConfig};
use tasklatch_pg::harness::LocalCluster;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement (minutes); figures in reports/scale-out.md"]
async fn sixteen_bucket_schemas_against_one() {
    let cluster = LocalCluster::start().unwrap_or_else(|e| {
        panic!("cannot start a throwaway cluster (PostgreSQL server binaries needed): {e}")
    });
    let server = cluster.server();
    let mut config = BucketsConfig::default();
    if let Ok(w) = std::env::var("BUCKETS_WORKERS") {
        config.workers = w
            .parse()
            .unwrap_or_else(|e| panic!("BUCKETS_WORKERS={w:?}: {e}"));
    }
    eprintln!("{config:?}");
    let report = run(&config, server, |line| eprintln!("{line}"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    for r in &report.runs {
        assert_eq!(r.events, config.rows, "every row delivered: {}", r.line());
    }
    eprintln!(
        "throughput, 16 bucket schemas / 1 schema: {:.3}",
        report.throughput_ratio()
    );
}
