//! Where the `db` and `gateway` hosts keep their state: the in-memory model, or real Postgres
//! through one blocking gateway thread.
//!
//! With Postgres, each call is handed to a thread that owns the connection and blocks the
//! simulation until the transaction commits: the simulated clock stands still during the
//! call, calls run one at a time, and `now` is passed in — so a seed replays identically
//! against real SQL.

use crate::db_wire::{dispatch, StoreRequest, StoreResponse};
use crate::gateway_wire::GatewayRequest;
use crate::pg_gateway::PgGateway;
use std::sync::Arc;
use tasklatch_core::ids::RunId;
use tasklatch_core::ledger::{LedgerError, MemLedger, RunLedger, RunRecord};
use tasklatch_core::mem_store::MemStore;
use tasklatch_core::ports::{LaunchOutcome, RunRequest, RunStatus};
use tasklatch_core::time::Timestamp;

/// A ledger call (the gateway's side of [`GatewayRequest`], plus run completion).
#[derive(Clone, Debug)]
pub enum LedgerCall {
    /// [`RunLedger::start_run`].
    Start(RunRequest, Timestamp),
    /// [`RunLedger::finish_run`].
    Finish(RunId, RunStatus, Timestamp),
    /// [`RunLedger::run_status`].
    Status(RunId),
    /// [`RunLedger::create_thread`].
    CreateThread(GatewayRequest, Timestamp),
    /// [`RunLedger::delete_thread`].
    DeleteThread(GatewayRequest, Timestamp),
    /// [`RunLedger::runs`].
    Runs,
}

/// A ledger call's answer.
#[derive(Clone, Debug)]
pub enum LedgerAnswer {
    /// Start.
    Launch(Result<LaunchOutcome, LedgerError>),
    /// Finish, create, delete.
    Done(Result<bool, LedgerError>),
    /// Status.
    Status(Result<RunStatus, LedgerError>),
    /// Runs.
    Runs(Result<Vec<RunRecord>, LedgerError>),
}

/// Runs a ledger call on any ledger.
pub async fn dispatch_ledger<L: RunLedger>(ledger: &L, call: LedgerCall) -> LedgerAnswer {
    match call {
        LedgerCall::Start(req, now) => LedgerAnswer::Launch(ledger.start_run(&req, now).await),
        LedgerCall::Finish(run, status, now) => {
            LedgerAnswer::Done(ledger.finish_run(&run, status, now).await)
        }
        LedgerCall::Status(run) => LedgerAnswer::Status(ledger.run_status(&run).await),
        LedgerCall::CreateThread(GatewayRequest::CreateThread(owner, thread), now) => {
            LedgerAnswer::Done(
                ledger
                    .create_thread(&owner, &thread, now)
                    .await
                    .map(|()| true),
            )
        }
        LedgerCall::DeleteThread(GatewayRequest::DeleteThread(thread), now) => {
            LedgerAnswer::Done(ledger.delete_thread(&thread, now).await)
        }
        LedgerCall::CreateThread(..) | LedgerCall::DeleteThread(..) => {
            LedgerAnswer::Done(Err(LedgerError("malformed thread call".into())))
        }
        LedgerCall::Runs => LedgerAnswer::Runs(ledger.runs().await),
    }
}

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
