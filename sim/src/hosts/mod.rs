//! The simulated hosts: `db`, `mcp`, `gateway`, `worker-N` and `user`.

pub mod db;
pub mod gateway;
pub mod mcp;
pub mod user;
pub mod worker;
