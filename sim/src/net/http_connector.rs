//! [`TurmoilConnector`]: the HTTP client's [`Connector`] over turmoil's simulated TCP. A URL's
//! host is a turmoil host name (or IP), its port the port that host listens on; `https` is not
//! simulated (the connection is plain TCP whatever the scheme). Connection faults — partitions,
//! holds, crashed hosts — are turmoil's, on simulated time.

use hyper_util::rt::TokioIo;
use std::io;
use tasklatch_http::http::Uri;
use tasklatch_http::{Connecting, Connector, Io};

/// Dials `turmoil::net::TcpStream`s. Must be used from inside a turmoil host or client.
#[derive(Clone, Copy, Debug, Default)]
pub struct TurmoilConnector;

impl Connector for TurmoilConnector {
    fn connect(&self, uri: Uri) -> Connecting {
        let host = uri.host().unwrap_or_default().to_owned();
        let port = uri.port_u16().unwrap_or(match uri.scheme_str() {
            Some("https") => 443,
            _ => 80,
        });
        Box::pin(async move {
            let stream = turmoil::net::TcpStream::connect((host.as_str(), port))
                .await
                // turmoil's texts name the host; the client's messages must not.
                .map_err(|e| io::Error::new(e.kind(), e.kind().to_string()))?;
            Ok(Box::new(TokioIo::new(stream)) as Box<dyn Io>)
        })
    }
}
