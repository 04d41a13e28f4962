//! tasklatch-load: load tooling against one Postgres (DESIGN "load"), kept out of the
//! production adapter.
//!
//! - [`stress`]: real concurrency — W engines, fault-injecting doubles, optional chaos — judged
//!   from what the doubles recorded.
//! - [`bench`]: end-to-end throughput against the SQL floor, claim latency at a million rows,
//!   throughput under an old snapshot.
//! - [`bulk`]: a million task rows in seconds.
//! - [`doubles`]: the remote server, launcher and agent runtime doubles they run against, and
//!   [`clock`]: the shared, sped-up clock they read.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod bench;
pub mod bulk;
pub mod clock;
pub mod doubles;
pub mod stress;
