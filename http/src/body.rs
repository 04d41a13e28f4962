//! An answer's body, read under the request's deadline: whole up to a byte limit (checked as
//! chunks arrive, before anything is parsed), as a prefix, chunk by chunk, or as a stream.

use crate::error::{from_body, HttpError};
use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use tokio::time::Instant;

/// A body being received. Every read fails with [`HttpError::Timeout`] once the request's
/// deadline has passed.
pub struct Body {
    incoming: Incoming,
    deadline: Instant,
}

impl Body {
    pub(crate) fn new(incoming: Incoming, deadline: Instant) -> Self {
        Body { incoming, deadline }
    }

    /// The next non-empty chunk; `None` at the end of the body.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, HttpError> {
        loop {
            let frame = match tokio::time::timeout_at(self.deadline, self.incoming.frame()).await {
                Err(_) => return Err(HttpError::Timeout),
                Ok(None) => return Ok(None),
                Ok(Some(Err(e))) => return Err(from_body(&e)),
                Ok(Some(Ok(frame))) => frame,
            };
            if let Ok(data) = frame.into_data() {
                if !data.is_empty() {
                    return Ok(Some(data));
                }
            }
        }
    }

    /// The whole body, refused with [`HttpError::TooLarge`] as soon as it passes `limit`
    /// bytes — before it is all received. `declared` is the `Content-Length`, if any: a
    /// declared length over the limit is refused before reading.
    pub async fn read_limited(
        mut self,
        limit: usize,
        declared: Option<u64>,
    ) -> Result<Vec<u8>, HttpError> {
        if declared.is_some_and(|n| n > limit as u64) {
            return Err(HttpError::TooLarge(limit));
        }
        let mut body = Vec::new();
        while let Some(chunk) = self.chunk().await? {
            if chunk.len() > limit - body.len() {
                return Err(HttpError::TooLarge(limit));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    /// At most the first `limit` bytes (a diagnostic: the rest is never read).
    pub async fn read_prefix(mut self, limit: usize) -> Result<Vec<u8>, HttpError> {
        let mut body = Vec::new();
        while body.len() < limit {
            let Some(chunk) = self.chunk().await? else {
                break;
            };
            let take = chunk.len().min(limit - body.len());
            body.extend_from_slice(&chunk[..take]);
        }
        Ok(body)
    }

    /// The chunks as a stream (for a streamed answer such as SSE); it ends after the first
    /// error, and still fails with [`HttpError::Timeout`] at the deadline.
    pub fn into_stream(self) -> BoxStream<'static, Result<Bytes, HttpError>> {
        futures::stream::unfold(Some(self), |body| async move {
            let mut body = body?;
            match body.chunk().await {
                Ok(Some(chunk)) => Some((Ok(chunk), Some(body))),
                Ok(None) => None,
                Err(e) => Some((Err(e), None)),
            }
        })
        .boxed()
    }
}
