//! Where the `db` and `gateway` hosts keep their state: the in-memory model, or real Postgres
//! through one blocking gateway thread.
//!
//! With Postgres, each call is handed to a thread that owns the connection and blocks the
//! simulation until the transaction commits: the simulated clock stands still during the
//! call, calls run one at a time, and `now` is passed in — so a seed replays identically
//! against real SQL.

use crate::run::ledger_call::{dispatch_ledger, LedgerAnswer, LedgerCall};
use crate::run::pg_gateway::PgGateway;
use crate::wire::db::{dispatch, StoreRequest, StoreResponse};
use std::sync::Arc;
use tasklatch_core::ledger::MemLedger;
use tasklatch_core::mem_store::MemStore;

/// The state behind the `db` and `gateway` hosts.
#[derive(Clone)]
pub enum Backend {
    /// The in-memory model.
    Mem {
        /// The store.
        store: Arc<MemStore>,
        /// The run ledger.
        ledger: Arc<MemLedger>,
    },
    /// Real Postgres: a fresh database behind a blocking gateway thread.
    Pg(Arc<PgGateway>),
}

impl Backend {
    /// A fresh in-memory backend.
    pub fn memory(policy: tasklatch_core::policy::Policy) -> Self {
        Backend::Mem {
            store: Arc::new(MemStore::new(policy)),
            ledger: Arc::new(MemLedger::new()),
        }
    }

    /// A fresh Postgres backend (a new database; see [`PgGateway`]).
    pub fn postgres(
        policy: tasklatch_core::policy::Policy,
        mutant: Option<tasklatch_core::mutation::Mutant>,
    ) -> Result<Self, String> {
        Ok(Backend::Pg(Arc::new(PgGateway::start(policy, mutant)?)))
    }

    /// Runs a store call (with Postgres, blocking the simulation until it commits).
    pub async fn store(&self, req: StoreRequest) -> StoreResponse {
        match self {
            Backend::Mem { store, .. } => dispatch(store.as_ref(), req).await,
            Backend::Pg(gw) => gw.store(req),
        }
    }

    /// Runs a store call from outside the simulation (the world's settle check).
    pub fn store_now(&self, req: StoreRequest) -> StoreResponse {
        futures::executor::block_on(self.store(req))
    }

    /// Runs a ledger call.
    pub async fn ledger(&self, call: LedgerCall) -> LedgerAnswer {
        match self {
            Backend::Mem { ledger, .. } => dispatch_ledger(ledger.as_ref(), call).await,
            Backend::Pg(gw) => gw.ledger(call),
        }
    }
}
