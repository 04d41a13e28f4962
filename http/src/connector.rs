//! Where connections come from. A [`Connector`] opens one byte stream to a URI's host and port;
//! the [`crate::Client`] speaks HTTP/1.1 over it. Production uses [`TcpTls`] (TCP, and rustls
//! for `https`); the simulation plugs in a connector over its simulated network.

use crate::error::HttpError;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tower_service::Service;

/// TCP keepalive: idle time before the first probe, and between probes.
const KEEPALIVE: Duration = Duration::from_secs(15);
/// TCP keepalive probes before the connection is given up.
const KEEPALIVE_RETRIES: u32 = 3;

/// An error a connector reports (its text is shown as the innermost cause: no URL in it).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A connection: bytes both ways, in hyper's I/O traits.
pub trait Io: Read + Write + Unpin + Send + 'static {}

impl<T: Read + Write + Unpin + Send + 'static> Io for T {}

/// What [`Connector::connect`] returns.
pub type Connecting = Pin<Box<dyn Future<Output = Result<Box<dyn Io>, BoxError>> + Send>>;

/// Opens connections. Contract: `connect(uri)` resolves to a stream connected to `uri`'s host
/// and port (for `https`, with TLS established and the server's certificate verified), ready
/// for HTTP/1.1; it fails (never hangs forever on its own account) when no connection can be
/// made. A connect timeout, if any, is the connector's; the client bounds the whole exchange.
pub trait Connector: Send + Sync + 'static {
    /// Opens one connection to `uri`'s authority.
    fn connect(&self, uri: http::Uri) -> Connecting;
}

/// The production connector, set up as reqwest 0.13 (without HTTP/2) sets up its own: TCP
/// without Nagle delay and with keepalive probes (15 s, every 15 s, 3 retries), and rustls on
/// aws-lc-rs for `https` with the platform's trust roots (TLS 1.2 and 1.3, certificates checked
/// by `rustls-platform-verifier`, ALPN `http/1.1`).
#[derive(Clone)]
pub struct TcpTls {
    inner: HttpsConnector<HttpConnector>,
}

impl TcpTls {
    /// A connector whose TCP connects give up after `connect_timeout` (`None`: only the
    /// request's deadline bounds them). Fails only when the TLS setup does (no usable
    /// platform verifier).
    pub fn new(connect_timeout: Option<Duration>) -> Result<Self, HttpError> {
        let tls = tls_config().map_err(|e| HttpError::Connect(format!("TLS setup failed: {e}")))?;
        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        tcp.set_connect_timeout(connect_timeout);
        tcp.set_keepalive(Some(KEEPALIVE));
        tcp.set_keepalive_interval(Some(KEEPALIVE));
        tcp.set_keepalive_retries(Some(KEEPALIVE_RETRIES));
        // `http` and `https` both, as hyper-rustls's `https_or_http`.
        let inner = HttpsConnector::from((tcp, tls));
        Ok(TcpTls { inner })
    }
}

/// rustls with the aws-lc-rs provider, safe default versions and the platform verifier.
fn tls_config() -> Result<rustls::ClientConfig, rustls::Error> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let verifier = rustls_platform_verifier::Verifier::new(provider.clone())?;
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

impl Connector for TcpTls {
    fn connect(&self, uri: http::Uri) -> Connecting {
        let mut inner = self.inner.clone();
        Box::pin(async move {
            let stream = inner.call(uri).await?;
            Ok(Box::new(stream) as Box<dyn Io>)
        })
    }
}

/// A [`Connector`] as hyper-util's client wants it: a cloneable `Service<Uri>`.
#[derive(Clone)]
pub(crate) struct Dial(pub(crate) Arc<dyn Connector>);

impl Service<http::Uri> for Dial {
    type Response = Conn;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Conn, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        let connecting = self.0.connect(uri);
        Box::pin(async move { connecting.await.map(Conn) })
    }
}

/// A connection from any connector (HTTP/1.1, never through a proxy).
pub(crate) struct Conn(Box<dyn Io>);

impl Connection for Conn {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

impl Read for Conn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_read(cx, buf)
    }
}

impl Write for Conn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_shutdown(cx)
    }
}
