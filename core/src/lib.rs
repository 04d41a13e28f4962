//! tasklatch-core: durable task notifications that are never lost, never duplicated and never
//! noisy.
//!
//! The engine is a set of lease-guarded state transitions over one row per task. This crate
//! holds the domain ([`task`] and its parts [`identity`] and [`remote`], [`event`], [`status`]),
//! the pure transitions ([`transitions`]) with the row's rules checked in the code
//! ([`invariants`]), the storage contract ([`store::Store`]) with its executable specification
//! ([`mem_store::MemStore`]), the ports to the outside world ([`ports`]) and the three loops
//! ([`engine::Engine`]). With the `conformance` feature it also exports the conformance suite
//! every store runs (`conformance`). It knows nothing of SQL or simulation, and never reads a
//! system clock or OS randomness.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod canonical;
#[cfg(feature = "conformance")]
pub mod conformance;
pub mod engine;
pub mod event;
pub mod identity;
pub mod ids;
pub mod invariants;
pub mod lease;
pub mod ledger;
pub mod mem_store;
pub mod mutation;
pub mod policy;
pub mod ports;
pub mod reconcile;
pub mod redaction;
pub mod remote;
pub mod row_codec;
pub mod secret;
pub mod snapshot;
pub mod status;
pub mod store;
pub mod task;
pub mod text;
pub mod time;
pub mod transitions;
