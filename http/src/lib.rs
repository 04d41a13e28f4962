//! tasklatch-http: the one HTTP client of the MCP drivers and the Agent Server launcher.
//!
//! hyper (HTTP/1.1) over a pluggable [`Connector`]: [`TcpTls`] in production (TCP, rustls on
//! aws-lc-rs, the platform's trust roots), a simulated network in the simulation. What every
//! caller relies on, kept in one place:
//!
//! - one **deadline per request**, covering the answer's head and its whole body ([`Client`]);
//! - **byte limits enforced while reading**, before anything is parsed ([`Body`]);
//! - every request **counted** ([`ClientConfig::sent`]);
//! - **no redirect followed**, no proxy, no decompression: an answer is taken as it comes;
//! - failures **classified** ([`HttpError`]) with messages that hold no URL and no header value.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod body;
mod client;
mod connector;
mod error;
mod request;
mod response;

pub use body::Body;
pub use client::{Client, ClientConfig};
pub use connector::{BoxError, Connecting, Connector, Io, TcpTls};
pub use error::HttpError;
/// The `http` crate this client's types come from (headers, methods, status codes, URIs).
pub use http;
pub use request::Request;
pub use response::Response;
