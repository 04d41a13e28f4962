//! An answer's head (status and headers) and its [`Body`], not yet read.

use crate::body::Body;
use http::header::{HeaderMap, CONTENT_LENGTH};
use http::StatusCode;

/// An answer whose head has arrived.
pub struct Response {
    status: StatusCode,
    headers: HeaderMap,
    body: Body,
}

impl Response {
    pub(crate) fn new(status: StatusCode, headers: HeaderMap, body: Body) -> Self {
        Response {
            status,
            headers,
            body,
        }
    }

    /// The status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The headers.
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// The header `name` as text, if present and visible ASCII.
    pub fn header_str(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The declared `Content-Length`, if any and well formed.
    pub fn content_length(&self) -> Option<u64> {
        self.header_str(CONTENT_LENGTH.as_str())
            .and_then(|v| v.parse().ok())
    }

    /// The body, to be read.
    pub fn into_body(self) -> Body {
        self.body
    }

    /// The body, to be read, with access to the head still (for streaming readers).
    pub fn body_mut(&mut self) -> &mut Body {
        &mut self.body
    }

    /// The whole body up to `limit` bytes ([`Body::read_limited`] with the declared length).
    pub async fn bytes_limited(self, limit: usize) -> Result<Vec<u8>, crate::HttpError> {
        let declared = self.content_length();
        self.body.read_limited(limit, declared).await
    }
}

/// The status only: header values may be secrets a server echoes.
impl std::fmt::Debug for Response {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Response")
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}
