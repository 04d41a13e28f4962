//! tasklatch-sim: a deterministic simulation of the whole system on turmoil.
//!
//! A [`plan::Plan`] (generated from a seed, or read from a file) describes one run: tasks and
//! their remote scripts, user actions and timed faults. [`world::run`] builds the world —
//! hosts `db`, `mcp`, `gateway`, `worker-N` and `user` — drives the chaos phase, heals, waits
//! until everything settles, and hands the recorded [`history`] to the [`checker`], which
//! verifies DOMAIN §9 from the outside. The same plan always yields the same history hash.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod agent_server;
pub mod backend;
pub mod campaign;
pub mod checker;
pub mod coverage;
pub mod ctx;
pub mod disguise;
pub mod fault;
pub mod fixture;
pub mod gateway_mode;
pub mod generate;
pub mod history;
pub mod hosts;
pub mod json_input;
pub mod ledger_call;
pub mod merge;
pub mod mutants;
pub mod naming;
pub mod pg_gateway;
pub mod plan;
pub mod ports;
pub mod replay;
pub mod replay_command;
pub mod report;
pub mod shard;
pub mod shrink;
pub mod summary;
pub mod timing;
pub mod trace;
pub mod wire;
pub mod world;
pub mod write_action;
