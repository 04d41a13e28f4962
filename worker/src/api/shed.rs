//! Load shedding: the router serves at most `http.max_in_flight` requests at once; a request
//! beyond that is answered `503` at once, with `Retry-After: 1`, and is not queued. The
//! unauthenticated routes (`/readyz`, `/metrics`, `/openapi.json`) and the authenticated ones
//! share the limit, so a flood of either cannot pile up work, memory or database connections.

use super::error::ApiError;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use tokio::sync::Semaphore;

/// Serves `request` when one of `limit`'s permits is free (held until the answer is built),
/// else answers 503 without serving it.
pub async fn shed(State(limit): State<Arc<Semaphore>>, request: Request, next: Next) -> Response {
    let Ok(_permit) = limit.try_acquire_owned() else {
        let mut busy = ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the worker is serving as many requests as it may at once; try again shortly",
        )
        .into_response();
        busy.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return busy;
    };
    next.run(request).await
}
