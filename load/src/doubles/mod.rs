//! The test doubles of the load tools: a scripted remote server, a fault-injecting launcher over
//! the real Postgres run ledger, a simulated agent runtime that ends the runs, and the bench's
//! server whose tasks are done at their first poll, and the latency bench's server that finishes
//! every task inline. None of them belongs in production.

pub mod done;
pub mod driver;
pub mod inline;
pub mod launcher;
pub mod runtime;
