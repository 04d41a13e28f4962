//! One run of a plan: the turmoil world and everything inside it — the hosts (`db`, `mcp`,
//! `gateway`, `worker-N`, `user`), the engines' ports over simulated TCP, where the store and
//! the launcher keep their state (memory or Postgres), and what every host of a run shares.

pub(crate) mod agent_server;
pub(crate) mod backend;
pub(crate) mod ctx;
pub(crate) mod hosts;
pub(crate) mod ledger_call;
pub(crate) mod pg_gateway;
pub(crate) mod ports;
pub(crate) mod world;

pub use backend::Backend;
pub use world::{run, RunOptions, RunOutcome};
