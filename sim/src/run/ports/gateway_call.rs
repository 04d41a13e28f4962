//! One request to the `gateway` host — the call both launcher flavours are built on (the
//! ledger's one launch call, and the Agent Server launcher's lookups, create and rollbacks).

use crate::wire::gateway::{GatewayRequest, GatewayResponse};
use crate::wire::rpc::{call, CallError};
use std::time::Duration;

/// Sends `req` to the `gateway` host and waits at most `within` for its answer.
pub async fn call_gateway(
    req: &GatewayRequest,
    within: Duration,
) -> Result<GatewayResponse, CallError> {
    call::<_, GatewayResponse>("gateway", req, within).await
}
