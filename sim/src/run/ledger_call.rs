//! Calls to the run ledger behind the `gateway` host, as values: the gateway host builds them,
//! and [`dispatch_ledger`] runs one on any [`RunLedger`] — the in-memory one in the backend,
//! or PgLedger on the Postgres gateway thread.

use crate::wire::gateway::GatewayRequest;
use tasklatch_core::ids::RunId;
use tasklatch_core::ledger::{LedgerError, RunLedger, RunRecord};
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
