//! The wire: what the simulated hosts send each other over simulated TCP.
//!
//! [`rpc`] is the transport (one connection per call, length-prefixed JSON frames, a deadline
//! on the whole call); [`db`], [`gateway`] and [`mcp`] are the messages of the three services.

pub mod db;
pub mod gateway;
pub mod mcp;
pub mod rpc;
