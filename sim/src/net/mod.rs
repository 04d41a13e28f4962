//! The simulated network as the production code's seams want it: the connector through which
//! the real HTTP client ([`tasklatch_http::Client`]) dials turmoil hosts.

mod http_connector;

pub use http_connector::TurmoilConnector;
