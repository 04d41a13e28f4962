//! The deployment kit (`deploy/`, issue 23 item 7) against the worker itself:
//!
//! - every metric name the alerting rules (`deploy/prometheus/alerts.yml`) and the Grafana
//!   dashboard (`deploy/grafana/tasklatch.json`) use is exported by a live worker, scraped
//!   from its `/metrics` on a real database (a histogram's `_bucket`, `_sum` and `_count`, a
//!   counter's `_total`, as the exposition declares them); and the scrape reads the backlog
//!   gauges from the database;
//! - the systemd unit waits longer than the worker's graceful stop before it kills it
//!   (`TimeoutStopSec` above `graceful_stop_bound` for the example configuration's leases),
//!   reads secrets from an `EnvironmentFile`, has no `ExecReload`, and keeps its hardening.
//!
//! `deploy/check` (CI) runs `promtool` and `systemd-analyze` on the same files.

#[path = "support/example.rs"]
mod example;
#[path = "support/live.rs"]
mod live;

use example::example_settings;
use live::{agent_server_double, config, free_port, settings, LiveWorker, ASSISTANT_FOUND};
use std::collections::BTreeSet;
use std::net::TcpListener;
use std::path::PathBuf;
use std::time::Duration;
use tasklatch_pg::harness::TestDb;
use tasklatch_worker::run::graceful_stop_bound;

fn deploy_file(path: &str) -> String {
    let full = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy")
        .join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// Every `tasklatch_…` identifier in `text` (metric names; the kit names nothing else so).
fn metric_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("tasklatch_") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        let preceded = rest[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        if !preceded {
            names.insert(tail[..end].to_owned());
        }
        rest = &tail[end..];
    }
    names
}

/// The sample names an exposition declares: each `# TYPE` line's family with the suffixes its
/// type has, and every sample line's name.
fn exported(exposition: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in exposition.lines() {
        if let Some(decl) = line.strip_prefix("# TYPE ") {
            let mut words = decl.split_whitespace();
            let (Some(name), Some(kind)) = (words.next(), words.next()) else {
                continue;
            };
            let suffixes: &[&str] = match kind {
                "counter" => &["_total", "_created"],
                "histogram" => &["_bucket", "_sum", "_count", "_created"],
                "info" => &["_info"],
                _ => &[""],
            };
            names.extend(suffixes.iter().map(|s| format!("{name}{s}")));
        } else if !line.starts_with('#') {
            let end = line.find(['{', ' ']).unwrap_or(line.len());
            names.insert(line[..end].to_owned());
        }
    }
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_metric_the_kit_queries_is_exported_by_a_live_worker() {
    let db = TestDb::create().await;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let agent = listener.local_addr().map(|a| a.port()).unwrap_or_default();
    agent_server_double(listener, ASSISTANT_FOUND);
    let (port, mcp) = (free_port(), free_port());
    let worker = LiveWorker::start(settings(&config(port, mcp, agent), db.url()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (status, exposition) = worker.get("/metrics", None).await;
    assert_eq!(status, 200, "{exposition}");
    let live = exported(&exposition);
    assert!(live.contains("tasklatch_ready"), "{exposition}");
    // The backlog gauges: every loop's series, read from the database by this very scrape
    // (the worker wires its refresher to /metrics), all 0 on this empty database.
    for kind in ["poll", "notify", "cancel"] {
        for gauge in ["due", "overdue", "oldest_due_age_seconds"] {
            let line = format!("tasklatch_backlog_{gauge}{{loop=\"{kind}\"}} 0");
            assert!(exposition.contains(&line), "no {line:?} in\n{exposition}");
        }
    }
    let refreshed = exposition
        .lines()
        .find_map(|l| l.strip_prefix("tasklatch_backlog_refreshed_timestamp_seconds "))
        .and_then(|v| v.trim().parse::<f64>().ok());
    assert!(
        refreshed.is_some_and(|s| s > 1.7e9),
        "the live worker did not read the backlog\n{exposition}"
    );

    let mut checked = 0;
    for file in ["prometheus/alerts.yml", "grafana/tasklatch.json"] {
        let used = metric_names(&deploy_file(file));
        assert!(used.len() >= 8, "{file} names only {used:?}");
        let missing: Vec<_> = used.iter().filter(|n| !live.contains(*n)).collect();
        assert!(
            missing.is_empty(),
            "{file} uses metrics the worker does not export: {missing:?}\nexported: {live:?}"
        );
        checked += used.len();
    }
    eprintln!(
        "{checked} metric names of the kit found among the {} the live worker declares",
        live.len()
    );
    worker.kill().await;
    db.cleanup().await;
}

#[test]
fn the_unit_outwaits_the_graceful_stop_and_keeps_its_hardening() {
    let unit = deploy_file("systemd/tasklatch-worker.service");
    let value = |key: &str| {
        unit.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
            .map(str::trim)
    };
    let stop_secs: u64 = value("TimeoutStopSec")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no TimeoutStopSec in seconds"));
    let settings = example_settings();
    let bound = graceful_stop_bound(&settings.policy);
    assert!(
        Duration::from_secs(stop_secs) > bound,
        "TimeoutStopSec={stop_secs} does not exceed the graceful stop of {bound:?}"
    );
    assert!(value("ExecReload").is_none(), "the worker does not reload");
    assert!(value("EnvironmentFile").is_some_and(|v| v.starts_with('/')));
    for (key, want) in [
        ("NoNewPrivileges", "yes"),
        ("ProtectSystem", "strict"),
        ("PrivateTmp", "yes"),
        ("ProtectHome", "yes"),
        ("DynamicUser", "yes"),
        ("CapabilityBoundingSet", ""),
        ("KillSignal", "SIGTERM"),
    ] {
        assert_eq!(value(key), Some(want), "{key}");
    }
    eprintln!("TimeoutStopSec={stop_secs} s > graceful stop bound {bound:?}");
}
