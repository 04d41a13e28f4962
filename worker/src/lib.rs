//! tasklatch-worker: the process operators run (DESIGN "worker").
//!
//! One worker process drives the three lease loops of the engine against Postgres, serves an
//! HTTP API for agents and UIs, and reports what it does. Several worker processes on one
//! database share the work: the leases decide who acts on a row, so there is no coordination
//! between processes and nothing to recover after a crash.
//!
//! - [`config`]: the TOML file, its environment overrides for secrets ([`config::load`]) and
//!   its validation into the settings every part uses ([`config::Settings`]).
//! - [`lane`]: one engine with its own worker id, run on a cadence: a pass whenever a wake-up
//!   arrives ([`wakeup`]) and at least once per tick.
//! - [`metered`] and [`metrics`]: what the loops did, derived from the store calls, in the
//!   Prometheus text format; [`backlog`]: the backlog gauges, read from the database when
//!   `/metrics` is scraped; [`logging`]: `tracing` with `RUST_LOG` and text or JSON lines.
//! - [`api`]: submit, list, detail and cancel, scoped to (owner, thread), with an OpenAPI
//!   document generated from the code; health and readiness.
//! - [`agent_tools`]: the same calls as MCP tools at `/mcp`, for the agent itself, with the
//!   thread taken from the runtime's header (off unless configured).
//! - [`ui`]: the background-task panel at `/ui/threads/{thread}` for people (off unless
//!   configured): server-rendered, live by push over SSE from the one listener of [`wakeup`].
//! - [`peers`]: whether the Agent Server and each MCP server answered the last contact (the
//!   driver and launcher wrapped to record it; the background assistant check), shown in
//!   `/readyz`'s body and the `tasklatch_peer_*` metrics.
//! - [`schema`]: the refusal to run on a schema that is behind; [`replication`]: the refusal
//!   to run where a failover could lose acknowledged writes (unless allowed).
//! - [`shutdown`]: SIGTERM/SIGINT: stop claiming, finish or release what is in flight, exit
//!   within one lease; a second signal exits at once.
//! - [`retention`]: the loop that deletes finished, settled tasks after a configured age (off
//!   by default).
//! - [`ops`]: the operator views behind `tasklatch tasks` and `tasklatch dead-letters`.
//! - [`run`]: start-up, in order, and the shutdown sequence.
//!
//! Secrets (the database URL, header values, API tokens, remote task ids, session ids, driver
//! data) never reach a log line, an error, a metric or an API answer.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod agent_tools;
pub mod api;
pub mod backlog;
pub mod build_info;
pub mod clock;
pub mod clock_guard;
pub mod config;
pub mod ids;
pub mod internal_view;
pub mod lane;
pub mod logging;
pub mod metered;
pub mod metrics;
pub mod ops;
pub mod peers;
pub mod poll_now;
pub mod replication;
pub mod retention;
pub mod run;
pub mod schema;
pub mod shutdown;
pub mod task_search;
pub mod token;
pub mod ui;
pub mod wakeup;

pub use run::{run, StartError};
