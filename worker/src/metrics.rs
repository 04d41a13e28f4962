//! The worker's metrics, served at `/metrics` in the Prometheus (OpenMetrics) text format.
//!
//! | metric | what |
//! |---|---|
//! | `tasklatch_claims_total{loop}` | rows claimed |
//! | `tasklatch_writes_applied_total{loop}` | lease-guarded writes the store accepted (releases excluded) |
//! | `tasklatch_writes_refused_total{loop,refusal}` | writes the store refused, by refusal; `lease_not_held` and `lease_expired` are **lease losses** |
//! | `tasklatch_releases_total{loop,counted}` | leases given back without a result; `counted="true"` counts a failure |
//! | `tasklatch_store_errors_total{op}` | store calls that failed as a whole |
//! | `tasklatch_events_recorded_total` | new event versions recorded (polls, cancels, submits) |
//! | `tasklatch_runs_started_total` | launches the Agent Server accepted |
//! | `tasklatch_deliveries_total` | notifications delivered (the run ended successfully) |
//! | `tasklatch_busy_answers_total` | 409 busy-thread answers (not failures) |
//! | `tasklatch_dead_letters_total{reason}` | snapshots given up: `thread_gone`, `budget`, `unavailable`; cancels: `cancel_budget` (a cancel ended by an outage shows in `tasklatch dead-letters list`) |
//! | `tasklatch_delivery_failures_total{step}` | counted delivery failures: `launch`, `run` |
//! | `tasklatch_unavailable_answers_total{step,server}` | calls a peer left unanswered (unreachable, timed out, 408/429/5xx), waited out and never counted as failures: `launch`, `lookup` (`server="agent_server"`), `cancel` (`server` the MCP server's id) |
//! | `tasklatch_poll_failures_total{server}` | polls that failed, by MCP server id (unanswered, malformed or refused) |
//! | `tasklatch_cancel_failures_total{server}` | remote cancels the MCP server refused (counted failures), by server id |
//! | `tasklatch_tasks_submitted_total` | tasks accepted through the API (agent tools' starts included) |
//! | `tasklatch_mcp_tool_calls_total{tool,outcome}` | agent tool calls at `/mcp` ([`crate::agent_tools`]): `tool` one of the five tool names or `unknown`; `outcome` `ok`, `refused` (the call's own fault: no thread, not found, invalid, conflict, or a tool read-only mode hides) or `error` (the store, the Agent Server or the remote server failed) |
//! | `tasklatch_pass_duration_seconds{loop}` | histogram of one loop's pass, claim to last write |
//! | `tasklatch_notification_latency_seconds` | histogram: notification due → run started (see [`crate::metered`]) |
//! | `tasklatch_passes_total` | engine passes, all lanes |
//! | `tasklatch_wakeups_total` | wake-up notifications received |
//! | `tasklatch_wakeup_reconnects_total` | times the wake-up listener lost its connection |
//! | `tasklatch_db_primary_changes_total` | with `database.hosts`: primaries found on another host than the one before (failovers followed) |
//! | `tasklatch_db_without_primary_seconds_total` | with `database.hosts`: seconds without a primary (store calls failing at once), the current spell included; taken from the follower at each scrape and `/readyz` |
//! | `tasklatch_pruned_total{what}` | rows deleted by retention: `tasks`, `runs` ([`crate::retention`]) |
//! | `tasklatch_clock_skew_seconds` | gauge: the database's clock minus this worker's, as the last pass measured it |
//! | `tasklatch_skew_refused_passes_total` | passes that claimed nothing because the skew exceeded `engine.max_clock_skew_ms` |
//! | `tasklatch_peer_up{kind,peer}` | gauge: 1 when the last contact with the peer succeeded, 0 when it failed; no series before the first contact ([`crate::peers`]) |
//! | `tasklatch_peer_last_success_timestamp_seconds{kind,peer}` | gauge: Unix time of the last successful contact |
//! | `tasklatch_ready` | gauge: 1 when the last readiness check (a `/readyz` call, or a scrape of `/metrics`) found the worker ready, else 0 |
//! | `tasklatch_build_info{version,commit}` | gauge, always 1: the crate version and the commit ([`crate::build_info`]) |
//! | `tasklatch_backlog_due{loop}` | gauge: rows the loop's claim would pick now (due, lease free or expired), read from the database at most every 15 s when `/metrics` is scraped ([`crate::backlog`]); counts stop at 10 000 |
//! | `tasklatch_backlog_overdue{loop}` | gauge: of those, the rows due for longer than 60 s |
//! | `tasklatch_backlog_oldest_due_age_seconds{loop}` | gauge: how long the oldest due row has been due; 0 when none is |
//! | `tasklatch_backlog_dead_letters{kind,reason}` | gauge: dead letters now (`tasklatch_dead_letters_total` counts those ever written): `kind="notify"` by `thread_gone`, `budget`, `unavailable`; `kind="cancel"` by `budget`, `unavailable` |
//! | `tasklatch_backlog_refreshed_timestamp_seconds` | gauge: Unix time of the last successful backlog read (0 before it); the backlog gauges keep their values while reads fail |
//!
//! No metric carries a task id, an owner, a thread or any text from a remote server: labels
//! are fixed words or configured ids (the MCP server ids of `[servers.<id>]`, `kind` is
//! `agent_server` or `mcp`), so the series count is bounded.

use crate::build_info::COMMIT;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use std::time::Duration;
use tasklatch_core::engine::ClockCheck;
use tasklatch_core::lease::{LeaseKind, Refusal};
use tasklatch_core::store::Pruned;
use tasklatch_pg::{Backlog, PrimaryStatus, DEAD_LETTER_SERIES};

/// The `Content-Type` of [`Metrics::render`]'s output.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A loop.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LoopLabel {
    r#loop: &'static str,
}

/// A loop and a refusal.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RefusalLabel {
    r#loop: &'static str,
    refusal: &'static str,
}

/// A loop and whether the release counted a failure.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReleaseLabel {
    r#loop: &'static str,
    counted: &'static str,
}

/// One fixed word naming a store call, a reason or a step.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OpLabel {
    op: &'static str,
}

/// A dead letter's reason.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabel {
    reason: &'static str,
}

/// What retention deleted: `tasks` or `runs`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PrunedLabel {
    what: &'static str,
}

/// A step of a delivery.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StepLabel {
    step: &'static str,
}

/// An MCP server, by its configured id.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ServerLabel {
    server: String,
}

/// A step and the peer it called: `agent_server`, or an MCP server's configured id.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StepServerLabel {
    step: &'static str,
    server: String,
}

/// The `server` label of the Agent Server's series.
const AGENT_SERVER: &str = "agent_server";

/// A peer: `kind` is `agent_server` or `mcp`, `peer` is `agent_server` or the configured MCP
/// server id.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PeerLabel {
    kind: &'static str,
    peer: String,
}

/// A dead letter's kind (`notify`, `cancel`) and reason, for the backlog's gauge.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DeadLetterLabel {
    kind: &'static str,
    reason: &'static str,
}

/// What was built: the crate version and the commit.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BuildLabel {
    version: &'static str,
    commit: &'static str,
}

/// An agent tool and how its call ended.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ToolCallLabel {
    tool: &'static str,
    outcome: &'static str,
}

/// How an agent tool call ended.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum ToolOutcome {
    /// It did what was asked.
    Ok,
    /// It was refused for its own sake: no thread, not found, invalid, conflict, hidden tool.
    Refused,
    /// A peer or the store failed.
    Error,
}

impl ToolOutcome {
    const ALL: [ToolOutcome; 3] = [ToolOutcome::Ok, ToolOutcome::Refused, ToolOutcome::Error];

    fn as_str(self) -> &'static str {
        match self {
            ToolOutcome::Ok => "ok",
            ToolOutcome::Refused => "refused",
            ToolOutcome::Error => "error",
        }
    }
}

/// Why a dead letter was written.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum DeadLetter {
    /// The thread is gone (404).
    ThreadGone,
    /// The delivery failure budget was spent.
    Budget,
    /// The cancel failure budget was spent.
    CancelBudget,
    /// The Agent Server stayed unavailable for `engine.max_unavailable_ms`.
    Unavailable,
}

/// A call a peer left unanswered (waited out, not a failure).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Unanswered {
    /// A launch of a run.
    Launch,
    /// A lookup of a run.
    Lookup,
}

/// A counted delivery failure.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum DeliveryFailure {
    /// The launch failed (not 409, not 404).
    Launch,
    /// The run ended without success, or is missing.
    Run,
}

fn latency_histogram() -> Histogram {
    // 1 ms … ~33 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

/// Every metric of one worker process. Shared by its lanes, its listener and its API.
pub struct Metrics {
    registry: Registry,
    claims: Family<LoopLabel, Counter>,
    applied: Family<LoopLabel, Counter>,
    refused: Family<RefusalLabel, Counter>,
    releases: Family<ReleaseLabel, Counter>,
    store_errors: Family<OpLabel, Counter>,
    events_recorded: Counter,
    runs_started: Counter,
    deliveries: Counter,
    busy_answers: Counter,
    dead_letters: Family<ReasonLabel, Counter>,
    delivery_failures: Family<StepLabel, Counter>,
    unavailable_answers: Family<StepServerLabel, Counter>,
    poll_failures: Family<ServerLabel, Counter>,
    cancel_failures: Family<ServerLabel, Counter>,
    submitted: Counter,
    tool_calls: Family<ToolCallLabel, Counter>,
    panel_streams: Gauge,
    pass_seconds: Family<LoopLabel, Histogram, fn() -> Histogram>,
    notification_latency: Histogram,
    passes: Counter,
    wakeups: Counter,
    reconnects: Counter,
    primary_changes: Counter,
    without_primary: Counter<f64, AtomicU64>,
    pruned: Family<PrunedLabel, Counter>,
    clock_skew: Gauge<f64, AtomicU64>,
    skew_refused: Counter,
    peer_up: Family<PeerLabel, Gauge>,
    peer_last_success: Family<PeerLabel, Gauge<f64, AtomicU64>>,
    build_info: Family<BuildLabel, Gauge>,
    ready: Gauge,
    backlog_due: Family<LoopLabel, Gauge>,
    backlog_overdue: Family<LoopLabel, Gauge>,
    backlog_oldest_age: Family<LoopLabel, Gauge<f64, AtomicU64>>,
    backlog_dead_letters: Family<DeadLetterLabel, Gauge>,
    backlog_refreshed: Gauge<f64, AtomicU64>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A fresh set of metrics, all zero, registered under `tasklatch_`.
    pub fn new() -> Self {
        let mut m = Metrics {
            registry: Registry::with_prefix("tasklatch"),
            claims: Family::default(),
            applied: Family::default(),
            refused: Family::default(),
            releases: Family::default(),
            store_errors: Family::default(),
            events_recorded: Counter::default(),
            runs_started: Counter::default(),
            deliveries: Counter::default(),
            busy_answers: Counter::default(),
            dead_letters: Family::default(),
            delivery_failures: Family::default(),
            unavailable_answers: Family::default(),
            poll_failures: Family::default(),
            cancel_failures: Family::default(),
            submitted: Counter::default(),
            tool_calls: Family::default(),
            panel_streams: Gauge::default(),
            pass_seconds: Family::new_with_constructor(latency_histogram),
            notification_latency: latency_histogram(),
            passes: Counter::default(),
            wakeups: Counter::default(),
            reconnects: Counter::default(),
            primary_changes: Counter::default(),
            without_primary: Counter::default(),
            pruned: Family::default(),
            clock_skew: Gauge::default(),
            skew_refused: Counter::default(),
            peer_up: Family::default(),
            peer_last_success: Family::default(),
            build_info: Family::default(),
            ready: Gauge::default(),
            backlog_due: Family::default(),
            backlog_overdue: Family::default(),
            backlog_oldest_age: Family::default(),
            backlog_dead_letters: Family::default(),
            backlog_refreshed: Gauge::default(),
        };
        m.register();
        m.zero_series();
        m.build_info
            .get_or_create(&BuildLabel {
                version: crate::build_info::VERSION,
                commit: COMMIT,
            })
            .set(1);
        m
    }

    fn register(&mut self) {
        self.register_loops();
        self.register_deliveries();
        self.register_process();
        self.register_peers();
        self.register_backlog();
    }

    /// Creates at 0 the series of every fixed label value, so a fresh worker exposes each
    /// family and `rate()`/`increase()` see the first event (a series born at 1 has no earlier
    /// sample to increase from): claims, writes, releases and refusals per loop, dead letters per
    /// reason, delivery failures per step, pruned rows, the store errors of the two calls
    /// every pass makes (`claim`, `store_time`), and the backlog gauges of every loop and of
    /// every dead letter's kind and reason.
    fn zero_series(&self) {
        for kind in [LeaseKind::Poll, LeaseKind::Notify, LeaseKind::Cancel] {
            let label = loop_label(kind);
            let _ = self.claims.get_or_create(&label);
            let _ = self.applied.get_or_create(&label);
            for counted in ["true", "false"] {
                let r#loop = kind.as_str();
                let _ = self
                    .releases
                    .get_or_create(&ReleaseLabel { r#loop, counted });
            }
            for refusal in ALL_REFUSALS {
                let r#loop = kind.as_str();
                let refusal = refusal_name(refusal);
                let _ = self
                    .refused
                    .get_or_create(&RefusalLabel { r#loop, refusal });
            }
        }
        for reason in ["thread_gone", "budget", "unavailable", "cancel_budget"] {
            let _ = self.dead_letters.get_or_create(&ReasonLabel { reason });
        }
        for step in ["launch", "run"] {
            let _ = self.delivery_failures.get_or_create(&StepLabel { step });
        }
        for step in ["launch", "lookup"] {
            let server = AGENT_SERVER.to_owned();
            let _ = self
                .unavailable_answers
                .get_or_create(&StepServerLabel { step, server });
        }
        for what in ["tasks", "runs"] {
            let _ = self.pruned.get_or_create(&PrunedLabel { what });
        }
        for op in ["claim", "store_time"] {
            let _ = self.store_errors.get_or_create(&OpLabel { op });
        }
        for kind in LeaseKind::ALL {
            let label = loop_label(kind);
            let _ = self.backlog_due.get_or_create(&label);
            let _ = self.backlog_overdue.get_or_create(&label);
            let _ = self.backlog_oldest_age.get_or_create(&label);
        }
        for (kind, reason) in DEAD_LETTER_SERIES {
            let reason = reason.as_str();
            let _ = self
                .backlog_dead_letters
                .get_or_create(&DeadLetterLabel { kind, reason });
        }
    }

    fn register_backlog(&mut self) {
        let r = &mut self.registry;
        r.register(
            "backlog_due",
            "Rows the loop would claim now: due, lease free or expired (at most 10000)",
            self.backlog_due.clone(),
        );
        r.register(
            "backlog_overdue",
            "Rows due for longer than 60 s and not claimed (at most 10000)",
            self.backlog_overdue.clone(),
        );
        r.register(
            "backlog_oldest_due_age_seconds",
            "How long the loop's oldest due row has been due (0 when none is)",
            self.backlog_oldest_age.clone(),
        );
        r.register(
            "backlog_dead_letters",
            "Dead letters now, by kind and reason (tasklatch_dead_letters_total counts those ever written)",
            self.backlog_dead_letters.clone(),
        );
        r.register(
            "backlog_refreshed_timestamp_seconds",
            "Unix time of the last successful backlog read (0 before it)",
            self.backlog_refreshed.clone(),
        );
    }

    fn register_peers(&mut self) {
        let r = &mut self.registry;
        r.register(
            "peer_up",
            "1 when the last contact with the peer succeeded, 0 when it failed",
            self.peer_up.clone(),
        );
        r.register(
            "peer_last_success_timestamp_seconds",
            "Unix time of the last successful contact with the peer",
            self.peer_last_success.clone(),
        );
        r.register(
            "ready",
            "1 when the last readiness check found the worker ready, else 0",
            self.ready.clone(),
        );
        r.register(
            "build_info",
            "Always 1: the version and the commit of this build",
            self.build_info.clone(),
        );
    }

    fn register_loops(&mut self) {
        let r = &mut self.registry;
        r.register("claims", "Rows claimed", self.claims.clone());
        r.register(
            "writes_applied",
            "Guarded writes accepted",
            self.applied.clone(),
        );
        r.register(
            "writes_refused",
            "Guarded writes refused, by refusal (lease_not_held and lease_expired are lease losses)",
            self.refused.clone(),
        );
        r.register(
            "releases",
            "Leases given back without a result",
            self.releases.clone(),
        );
        r.register(
            "store_errors",
            "Store calls that failed",
            self.store_errors.clone(),
        );
        r.register(
            "pass_duration_seconds",
            "One loop's pass, claim to last write",
            self.pass_seconds.clone(),
        );
        r.register(
            "poll_failures",
            "Failed remote polls",
            self.poll_failures.clone(),
        );
        r.register(
            "cancel_failures",
            "Failed remote cancels",
            self.cancel_failures.clone(),
        );
    }

    fn register_deliveries(&mut self) {
        let r = &mut self.registry;
        r.register(
            "events_recorded",
            "New event versions",
            self.events_recorded.clone(),
        );
        r.register(
            "runs_started",
            "Launches accepted",
            self.runs_started.clone(),
        );
        r.register(
            "deliveries",
            "Notifications delivered",
            self.deliveries.clone(),
        );
        r.register(
            "busy_answers",
            "409 busy-thread answers",
            self.busy_answers.clone(),
        );
        r.register(
            "dead_letters",
            "Snapshots or cancels given up",
            self.dead_letters.clone(),
        );
        r.register(
            "delivery_failures",
            "Counted delivery failures",
            self.delivery_failures.clone(),
        );
        r.register(
            "unavailable_answers",
            "Calls a peer left unanswered: waited out, not counted as failures",
            self.unavailable_answers.clone(),
        );
        r.register(
            "notification_latency_seconds",
            "Notification due to run started",
            self.notification_latency.clone(),
        );
    }

    fn register_process(&mut self) {
        let r = &mut self.registry;
        r.register(
            "tasks_submitted",
            "Tasks accepted through the API",
            self.submitted.clone(),
        );
        r.register(
            "mcp_tool_calls",
            "Agent tool calls at /mcp, by tool and outcome",
            self.tool_calls.clone(),
        );
        r.register(
            "ui_streams",
            "Panel push streams (server-sent events) open now",
            self.panel_streams.clone(),
        );
        r.register("passes", "Engine passes", self.passes.clone());
        r.register(
            "wakeups",
            "Wake-up notifications received",
            self.wakeups.clone(),
        );
        r.register(
            "wakeup_reconnects",
            "Wake-up listener connections lost",
            self.reconnects.clone(),
        );
        r.register(
            "db_primary_changes",
            "Database primaries found on another host than the one before",
            self.primary_changes.clone(),
        );
        r.register(
            "db_without_primary_seconds",
            "Seconds without a database primary among the hosts",
            self.without_primary.clone(),
        );
        r.register(
            "pruned",
            "Rows deleted by retention: finished tasks and their ended runs",
            self.pruned.clone(),
        );
        r.register(
            "clock_skew_seconds",
            "The database's clock minus this worker's, as last measured",
            self.clock_skew.clone(),
        );
        r.register(
            "skew_refused_passes",
            "Passes that claimed nothing: the clock skew exceeded max_clock_skew",
            self.skew_refused.clone(),
        );
    }

    /// What a pass's clock check found: the gauge takes a measured skew, and a pass refused
    /// for skew is counted. (An unreadable store clock is a failed `store_time` store call,
    /// counted where the store is metered.)
    pub fn clock_checked(&self, check: ClockCheck) {
        if let Some(ms) = check.skew_ms() {
            self.clock_skew.set(ms as f64 / 1_000.0);
        }
        if let ClockCheck::Refused(_) = check {
            self.skew_refused.inc();
        }
    }

    /// The text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }

    /// `n` rows claimed by loop `kind`.
    pub fn claimed(&self, kind: LeaseKind, n: usize) {
        self.claims
            .get_or_create(&loop_label(kind))
            .inc_by(n as u64);
    }

    /// One write of loop `kind` accepted.
    pub fn applied(&self, kind: LeaseKind) {
        self.applied.get_or_create(&loop_label(kind)).inc();
    }

    /// One write of loop `kind` refused.
    pub fn refused(&self, kind: LeaseKind, refusal: Refusal) {
        let label = RefusalLabel {
            r#loop: kind.as_str(),
            refusal: refusal_name(refusal),
        };
        self.refused.get_or_create(&label).inc();
    }

    /// One lease of loop `kind` released; `counted` if it counted a failure.
    pub fn released(&self, kind: LeaseKind, counted: bool) {
        let label = ReleaseLabel {
            r#loop: kind.as_str(),
            counted: if counted { "true" } else { "false" },
        };
        self.releases.get_or_create(&label).inc();
    }

    /// A store call `op` failed as a whole.
    pub fn store_error(&self, op: &'static str) {
        self.store_errors.get_or_create(&OpLabel { op }).inc();
    }

    /// A new event version was recorded.
    pub fn event_recorded(&self) {
        self.events_recorded.inc();
    }

    /// A launch was accepted, `latency` after the notification became due (if known).
    pub fn run_started(&self, latency: Option<Duration>) {
        self.runs_started.inc();
        if let Some(l) = latency {
            self.notification_latency.observe(l.as_secs_f64());
        }
    }

    /// A notification was delivered.
    pub fn delivered(&self) {
        self.deliveries.inc();
    }

    /// A 409 busy answer was recorded.
    pub fn busy(&self) {
        self.busy_answers.inc();
    }

    /// A dead letter was written.
    pub fn dead_letter(&self, why: DeadLetter) {
        let reason = match why {
            DeadLetter::ThreadGone => "thread_gone",
            DeadLetter::Budget => "budget",
            DeadLetter::CancelBudget => "cancel_budget",
            DeadLetter::Unavailable => "unavailable",
        };
        self.dead_letters
            .get_or_create(&ReasonLabel { reason })
            .inc();
    }

    /// A counted delivery failure.
    pub fn delivery_failed(&self, step: DeliveryFailure) {
        let step = match step {
            DeliveryFailure::Launch => "launch",
            DeliveryFailure::Run => "run",
        };
        self.delivery_failures
            .get_or_create(&StepLabel { step })
            .inc();
    }

    /// The Agent Server left a call unanswered (waited out, not counted).
    pub fn unanswered(&self, step: Unanswered) {
        let step = match step {
            Unanswered::Launch => "launch",
            Unanswered::Lookup => "lookup",
        };
        let server = AGENT_SERVER.to_owned();
        self.unavailable_answers
            .get_or_create(&StepServerLabel { step, server })
            .inc();
    }

    /// Creates the zero series of the MCP server `server` (a configured id), so that a rate
    /// over them is defined before the first failure.
    pub fn mcp_server(&self, server: &str) {
        let label = ServerLabel {
            server: server.to_owned(),
        };
        let _ = self.poll_failures.get_or_create(&label);
        let _ = self.cancel_failures.get_or_create(&label);
        let step = StepServerLabel {
            step: "cancel",
            server: server.to_owned(),
        };
        let _ = self.unavailable_answers.get_or_create(&step);
    }

    /// A remote poll of `server` failed.
    pub fn poll_failed(&self, server: &str) {
        let server = server.to_owned();
        self.poll_failures
            .get_or_create(&ServerLabel { server })
            .inc();
    }

    /// `server` refused a remote cancel (a counted failure).
    pub fn cancel_failed(&self, server: &str) {
        let server = server.to_owned();
        self.cancel_failures
            .get_or_create(&ServerLabel { server })
            .inc();
    }

    /// `server` left a remote cancel unanswered (waited out, not counted).
    pub fn cancel_unanswered(&self, server: &str) {
        let label = StepServerLabel {
            step: "cancel",
            server: server.to_owned(),
        };
        self.unavailable_answers.get_or_create(&label).inc();
    }

    /// A task was accepted through the API.
    pub fn submitted(&self) {
        self.submitted.inc();
    }

    /// Creates at 0 the series of every outcome of each agent tool in `tools`, so that a rate
    /// over them is defined before the first call.
    pub fn agent_tools(&self, tools: &[&'static str]) {
        for &tool in tools {
            for outcome in ToolOutcome::ALL {
                let outcome = outcome.as_str();
                let _ = self
                    .tool_calls
                    .get_or_create(&ToolCallLabel { tool, outcome });
            }
        }
    }

    /// A call of agent tool `tool` (a tool's name, or `unknown`) ended with `outcome`.
    pub fn tool_called(&self, tool: &'static str, outcome: ToolOutcome) {
        let outcome = outcome.as_str();
        self.tool_calls
            .get_or_create(&ToolCallLabel { tool, outcome })
            .inc();
    }

    /// A panel push stream opened (`true`) or ended (`false`).
    pub fn panel_stream(&self, open: bool) {
        if open {
            self.panel_streams.inc();
        } else {
            self.panel_streams.dec();
        }
    }

    /// Loop `kind`'s pass took `took`.
    pub fn pass(&self, kind: LeaseKind, took: Duration) {
        self.pass_seconds
            .get_or_create(&loop_label(kind))
            .observe(took.as_secs_f64());
    }

    /// One engine pass ended.
    pub fn passed(&self) {
        self.passes.inc();
    }

    /// A wake-up notification arrived.
    pub fn wakeup(&self) {
        self.wakeups.inc();
    }

    /// The wake-up listener lost its connection.
    pub fn reconnect(&self) {
        self.reconnects.inc();
    }

    /// A contact with a peer (`kind` `agent_server` or `mcp`, `peer` its id) ended: `ok` if it
    /// succeeded, at `unix_seconds`. Sets `peer_up`, and on success the last-success time.
    pub fn peer_contact(&self, kind: &'static str, peer: &str, ok: bool, unix_seconds: f64) {
        let label = PeerLabel {
            kind,
            peer: peer.to_owned(),
        };
        self.peer_up.get_or_create(&label).set(i64::from(ok));
        if ok {
            self.peer_last_success
                .get_or_create(&label)
                .set(unix_seconds);
        }
    }

    /// The host list's record as its follower keeps it (`tasklatch_pg::PrimaryStatus`): both
    /// counters are brought up to its totals (they never go down).
    pub fn primary(&self, status: &PrimaryStatus) {
        let changes = status.changes.saturating_sub(self.primary_changes.get());
        self.primary_changes.inc_by(changes);
        let seconds = status.without_primary.as_secs_f64() - self.without_primary.get();
        if seconds > 0.0 {
            self.without_primary.inc_by(seconds);
        }
    }

    /// A readiness check found the worker `ready` (or not).
    pub fn readiness(&self, ready: bool) {
        self.ready.set(i64::from(ready));
    }

    /// The backlog as just read ([`crate::backlog`]): every backlog gauge takes its value
    /// from `b`, and the refresh time is `b.now`.
    pub fn backlog(&self, b: &Backlog) {
        let gauge = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        for kind in LeaseKind::ALL {
            let label = loop_label(kind);
            let work = b.of(kind);
            self.backlog_due.get_or_create(&label).set(gauge(work.due));
            self.backlog_overdue
                .get_or_create(&label)
                .set(gauge(work.overdue));
            self.backlog_oldest_age
                .get_or_create(&label)
                .set(work.oldest_due_age(b.now).as_secs_f64());
        }
        for ((kind, reason), n) in DEAD_LETTER_SERIES.into_iter().zip(b.dead_letters) {
            let reason = reason.as_str();
            self.backlog_dead_letters
                .get_or_create(&DeadLetterLabel { kind, reason })
                .set(gauge(n));
        }
        self.backlog_refreshed
            .set(b.now.as_micros() as f64 / 1_000_000.0);
    }

    /// Retention deleted these rows.
    pub fn pruned(&self, p: Pruned) {
        self.pruned
            .get_or_create(&PrunedLabel { what: "tasks" })
            .inc_by(p.tasks);
        self.pruned
            .get_or_create(&PrunedLabel { what: "runs" })
            .inc_by(p.runs);
    }
}

fn loop_label(kind: LeaseKind) -> LoopLabel {
    LoopLabel {
        r#loop: kind.as_str(),
    }
}

/// Every refusal, for the series created at 0.
const ALL_REFUSALS: [Refusal; 6] = [
    Refusal::NoSuchTask,
    Refusal::LeaseNotHeld,
    Refusal::LeaseExpired,
    Refusal::VersionMoved,
    Refusal::CancelRequested,
    Refusal::Terminal,
];

/// The label value of a refusal.
pub fn refusal_name(r: Refusal) -> &'static str {
    match r {
        Refusal::NoSuchTask => "no_such_task",
        Refusal::LeaseNotHeld => "lease_not_held",
        Refusal::LeaseExpired => "lease_expired",
        Refusal::VersionMoved => "version_moved",
        Refusal::CancelRequested => "cancel_requested",
        Refusal::Terminal => "terminal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exposition_names_every_family_with_its_labels() {
        let m = Metrics::new();
        m.claimed(LeaseKind::Poll, 3);
        m.refused(LeaseKind::Notify, Refusal::LeaseExpired);
        m.released(LeaseKind::Cancel, false);
        m.dead_letter(DeadLetter::ThreadGone);
        m.run_started(Some(Duration::from_millis(12)));
        m.pass(LeaseKind::Poll, Duration::from_millis(3));
        let text = m.render();
        for line in [
            "tasklatch_claims_total{loop=\"poll\"} 3",
            "tasklatch_writes_refused_total{loop=\"notify\",refusal=\"lease_expired\"} 1",
            "tasklatch_releases_total{loop=\"cancel\",counted=\"false\"} 1",
            "tasklatch_dead_letters_total{reason=\"thread_gone\"} 1",
            "tasklatch_runs_started_total 1",
            "tasklatch_notification_latency_seconds_count 1",
            "tasklatch_pass_duration_seconds_count{loop=\"poll\"} 1",
            "# EOF",
        ] {
            assert!(text.contains(line), "missing {line:?} in\n{text}");
        }
    }

    #[test]
    fn a_fresh_worker_exposes_every_fixed_series_at_zero_and_its_build() {
        let m = Metrics::new();
        m.readiness(true);
        m.mcp_server("fix");
        let text = m.render();
        for line in [
            "tasklatch_dead_letters_total{reason=\"budget\"} 0",
            "tasklatch_dead_letters_total{reason=\"cancel_budget\"} 0",
            "tasklatch_writes_refused_total{loop=\"cancel\",refusal=\"lease_not_held\"} 0",
            "tasklatch_releases_total{loop=\"notify\",counted=\"true\"} 0",
            "tasklatch_delivery_failures_total{step=\"run\"} 0",
            "tasklatch_unavailable_answers_total{step=\"lookup\",server=\"agent_server\"} 0",
            "tasklatch_unavailable_answers_total{step=\"cancel\",server=\"fix\"} 0",
            "tasklatch_poll_failures_total{server=\"fix\"} 0",
            "tasklatch_cancel_failures_total{server=\"fix\"} 0",
            "tasklatch_dead_letters_total{reason=\"unavailable\"} 0",
            "tasklatch_pruned_total{what=\"runs\"} 0",
            "tasklatch_store_errors_total{op=\"store_time\"} 0",
            "tasklatch_ready 1",
        ] {
            assert!(text.contains(line), "missing {line:?} in\n{text}");
        }
        let build = format!(
            "tasklatch_build_info{{version=\"{}\",commit=\"{COMMIT}\"}} 1",
            env!("CARGO_PKG_VERSION")
        );
        assert!(text.contains(&build), "missing {build:?} in\n{text}");
    }

    #[test]
    fn the_backlog_gauges_exist_at_zero_and_take_a_read_backlog() {
        use tasklatch_core::time::Timestamp;
        use tasklatch_pg::LoopBacklog;
        let m = Metrics::new();
        let fresh = m.render();
        for kind in ["poll", "notify", "cancel"] {
            for gauge in ["due", "overdue", "oldest_due_age_seconds"] {
                let line = format!("tasklatch_backlog_{gauge}{{loop=\"{kind}\"}} 0");
                assert!(fresh.contains(&line), "missing {line:?} in\n{fresh}");
            }
        }
        for (kind, reason) in DEAD_LETTER_SERIES {
            let reason = reason.as_str();
            let line =
                format!("tasklatch_backlog_dead_letters{{kind=\"{kind}\",reason=\"{reason}\"}} 0");
            assert!(fresh.contains(&line), "missing {line:?} in\n{fresh}");
        }
        let now = Timestamp::from_micros(1_700_000_100_250_000);
        m.backlog(&Backlog {
            now,
            poll: LoopBacklog {
                due: 7,
                overdue: 3,
                oldest_due: Some(Timestamp::from_micros(1_700_000_000_000_000)),
            },
            notify: LoopBacklog::default(),
            cancel: LoopBacklog {
                due: 1,
                overdue: 0,
                oldest_due: Some(now),
            },
            dead_letters: [4, 0, 2, 0, 9],
        });
        let text = m.render();
        for line in [
            "tasklatch_backlog_due{loop=\"poll\"} 7",
            "tasklatch_backlog_overdue{loop=\"poll\"} 3",
            "tasklatch_backlog_oldest_due_age_seconds{loop=\"poll\"} 100.25",
            "tasklatch_backlog_due{loop=\"notify\"} 0",
            "tasklatch_backlog_oldest_due_age_seconds{loop=\"notify\"} 0.0",
            "tasklatch_backlog_due{loop=\"cancel\"} 1",
            "tasklatch_backlog_oldest_due_age_seconds{loop=\"cancel\"} 0.0",
            "tasklatch_backlog_dead_letters{kind=\"notify\",reason=\"thread_gone\"} 4",
            "tasklatch_backlog_dead_letters{kind=\"notify\",reason=\"unavailable\"} 2",
            "tasklatch_backlog_dead_letters{kind=\"cancel\",reason=\"budget\"} 0",
            "tasklatch_backlog_dead_letters{kind=\"cancel\",reason=\"unavailable\"} 9",
            "tasklatch_backlog_refreshed_timestamp_seconds 1700000100.25",
        ] {
            assert!(text.contains(line), "missing {line:?} in\n{text}");
        }
    }

    #[test]
    fn agent_tool_calls_are_counted_by_tool_and_outcome() {
        let m = Metrics::new();
        assert!(!m.render().contains("tool=\"get_background_task\""));
        m.agent_tools(&["get_background_task"]);
        m.tool_called("get_background_task", ToolOutcome::Refused);
        m.tool_called("unknown", ToolOutcome::Refused);
        let text = m.render();
        for line in [
            "tasklatch_mcp_tool_calls_total{tool=\"get_background_task\",outcome=\"ok\"} 0",
            "tasklatch_mcp_tool_calls_total{tool=\"get_background_task\",outcome=\"refused\"} 1",
            "tasklatch_mcp_tool_calls_total{tool=\"get_background_task\",outcome=\"error\"} 0",
            "tasklatch_mcp_tool_calls_total{tool=\"unknown\",outcome=\"refused\"} 1",
        ] {
            assert!(text.contains(line), "missing {line:?} in\n{text}");
        }
    }

    #[test]
    fn no_metric_family_is_declared_twice() {
        // A gauge named like a counter's family (`tasklatch_dead_letters` beside
        // `tasklatch_dead_letters_total`) would declare one family twice: an exposition
        // Prometheus refuses whole.
        let text = Metrics::new().render();
        let mut seen = std::collections::BTreeSet::new();
        for line in text.lines() {
            if let Some(decl) = line.strip_prefix("# TYPE ") {
                let name = decl.split_whitespace().next().unwrap_or_default();
                assert!(
                    seen.insert(name.to_owned()),
                    "{name} declared twice in\n{text}"
                );
            }
        }
        assert!(seen.contains("tasklatch_dead_letters"));
        assert!(seen.contains("tasklatch_backlog_dead_letters"));
    }
}
