//! The simulated hosts: `db`, `mcp`, `gateway`, `worker-N` and `user`.

pub mod db;
pub mod gateway;
mod lost_replies;
pub mod mcp;
pub mod retention;
pub mod user;
pub mod worker;
