//! `PgStore`: the production [`Store`](tasklatch_core::store::Store) over Postgres (DESIGN "pg-adapter").
//!
//! Every method is one transaction, normally one statement (the texts are the files under
//! `pg-adapter/sql/store/`, see `sql.rs`):
//! claims are `UPDATE … FROM (SELECT … FOR UPDATE SKIP LOCKED)`; guarded writes lock their rows
//! in id order, evaluate the core guard in SQL and apply the transition against the row's
//! current values, reporting each row's [`Refusal`](tasklatch_core::lease::Refusal) exactly as `MemStore` does. `now` is always
//! a parameter. Remote text is made storable (NUL → U+FFFD) before it is bound, so no payload can
//! make a write fail.
//!
//! Durability: a call that returned `Ok` has committed (with the server's commit settings); a
//! call that returned [`StoreError::Unavailable`](tasklatch_core::store::StoreError::Unavailable) may or may not have committed — every method
//! is safe to follow by a re-claim, and an unreleased lease simply expires.
//!
//! The files, one concept each: `open.rs` makes a store and answers what it was made with;
//! `rounds.rs` runs a guarded batch write as rounds of distinct tasks; `bind.rs` turns the
//! core's writes and rows into statement parameters; `decode.rs` reads rows and outcome rows
//! back; `api.rs` is the `Store` implementation, one statement per method.

mod api;
mod bind;
mod decode;
mod open;
mod rounds;

pub(crate) use decode::{col, u64_col};

use crate::sql::GuardedWrites;
use sqlx::postgres::PgArguments;
use sqlx::query::Query;
use sqlx::{PgPool, Postgres};
use std::sync::Arc;
#[cfg(feature = "mutations")]
use tasklatch_core::mutation::Mutant;
use tasklatch_core::policy::Policy;

/// A statement with its parameters bound, ready to run.
type PgQuery = Query<'static, Postgres, PgArguments>;

/// What every clone of a store shares.
struct Inner {
    /// The connection pool every method runs on.
    pool: PgPool,
    /// The timings the transitions use.
    policy: Policy,
    /// The guarded write statements: the correct ones, or a planted bug's variants.
    writes: GuardedWrites,
    /// The planted bug in force, if any.
    #[cfg(feature = "mutations")]
    mutant: Option<Mutant>,
}

/// The Postgres store. Cheap to clone: clones share the pool and the prepared statement texts.
#[derive(Clone)]
pub struct PgStore {
    inner: Arc<Inner>,
}
