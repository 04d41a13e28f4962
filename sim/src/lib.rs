//! tasklatch-sim: a deterministic simulation of the whole system on turmoil.
//!
//! A [`plan::Plan`] (generated from a seed, or read from a file) describes one run: tasks and
//! their remote scripts, user actions and timed faults. [`run::run`] builds the world — hosts
//! `db`, `mcp`, `gateway`, `worker-N` and `user` — drives the chaos phase, heals, waits until
//! everything settles, and hands the recorded [`history`] to the [`check`]er, which verifies
//! DOMAIN §9 from the outside. A [`campaign`] runs many seeds; a [`report`] draws one run. The
//! same plan always yields the same history hash.
//!
//! Layers, each using only those above it: `plan` (what a run is: plans, faults, seeds, marks),
//! `wire` (the services' messages), `history` (what the world saw), `check` (the rules read
//! from a history), `run` (the world that makes a history), `report`, `campaign`; beside them,
//! `net` (the simulated network as the production HTTP client dials it).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod campaign;
pub mod check;
pub mod history;
pub mod net;
pub mod plan;
pub mod report;
pub mod run;
pub(crate) mod wire;
