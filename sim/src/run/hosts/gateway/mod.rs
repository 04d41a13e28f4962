//! The `gateway` host: the launcher. In `ledger` mode (the default) an idempotent run ledger
//! (the same key yields the same run), 409 while a run is active on the thread, 404 for deleted
//! threads; in `langgraph` mode a simulated LangGraph Agent Server. Either way a simulated
//! agent runtime ends each run after a while — successfully unless a fault says otherwise.
//!
//! `ledger` and `langgraph` serve their mode's requests; both share the gateway's state and
//! the launch tail (`runs`) and how a run ends (`fate`).

mod fate;
mod langgraph;
mod ledger;
mod runs;

pub use runs::GatewayState;

use crate::plan::gateway_mode::GatewayMode;
use crate::run::backend::Backend;
use crate::run::ctx::Ctx;
use crate::wire::gateway::{GatewayRequest, GatewayResponse};
use crate::wire::rpc::{serve, Reply};
use std::sync::{Arc, Mutex};

/// The `gateway` host's software.
pub async fn host(
    ctx: Arc<Ctx>,
    backend: Backend,
    state: Arc<Mutex<GatewayState>>,
) -> turmoil::Result {
    serve(move |req: GatewayRequest| {
        let ctx = ctx.clone();
        let backend = backend.clone();
        let state = state.clone();
        async move { handle(ctx, backend, state, req).await }
    })
    .await
}

/// Serves one request as the plan's gateway mode does.
async fn handle(
    ctx: Arc<Ctx>,
    backend: Backend,
    state: Arc<Mutex<GatewayState>>,
    req: GatewayRequest,
) -> Reply<GatewayResponse> {
    match ctx.plan.gateway {
        GatewayMode::Ledger => ledger::handle(ctx, backend, state, req).await,
        GatewayMode::Langgraph => langgraph::handle(ctx, state, req).await,
    }
}
