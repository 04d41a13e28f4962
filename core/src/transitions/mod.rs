//! Pure transitions over the task row: where the rules of DOMAIN.md live.
//!
//! Each function takes the current row (or part of it) and returns the new one or a typed
//! refusal; none performs I/O. `MemStore` applies them directly; the Postgres store mirrors them
//! in SQL and a differential property test holds the two to the same results.
//!
//! - [`poll`]: what a poll result means for the remote state and schedule (DOMAIN §4).
//! - [`outbox`]: the notification state machine and the version pair (DOMAIN §2, §3).
//! - [`cancel`]: cancel requests and the cancel work (DOMAIN §6).
//! - [`submit`]: the first row of a task (DOMAIN §7).
//! - [`answer`]: answers to input requests, sent at most once.
//! - [`guard`]: the write guards shared by every lease-guarded write (DOMAIN §5).
//! - [`retention`]: which finished rows may be deleted.

pub mod answer;
pub mod cancel;
pub mod guard;
pub mod outbox;
pub mod poll;
pub mod poll_sooner;
pub mod retention;
pub mod submit;
