//! A TCP relay the end-to-end test puts between a worker and one of its peers: it forwards
//! bytes both ways, can hold the peer's answers back (a slow peer), and can cut the peer off —
//! every open connection closed at once and new ones closed as they arrive, as when a database
//! fails over — and restore it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// Bytes read per chunk in each direction.
const CHUNK: usize = 16 * 1024;

/// A running relay to one upstream address; stopped when dropped.
pub struct Relay {
    pub port: u16,
    shared: Arc<Shared>,
    accept: tokio::task::JoinHandle<()>,
}

struct Shared {
    upstream: String,
    blocked: AtomicBool,
    /// Milliseconds each chunk from the upstream is held before it is forwarded.
    delay_ms: AtomicU64,
    /// Bumped by [`Relay::block`]: every live connection closes when it changes.
    cut: watch::Sender<u64>,
}

impl Relay {
    /// A relay on a free local port forwarding to `upstream` (`host:port`).
    pub async fn start(upstream: &str) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("relay bind: {e}"));
        let port = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("relay address: {e}"))
            .port();
        let shared = Arc::new(Shared {
            upstream: upstream.to_owned(),
            blocked: AtomicBool::new(false),
            delay_ms: AtomicU64::new(0),
            cut: watch::channel(0).0,
        });
        let accept = tokio::spawn(accept_loop(listener, shared.clone()));
        Relay {
            port,
            shared,
            accept,
        }
    }

    /// Cuts the upstream off: open connections close now, new ones close on arrival.
    pub fn block(&self) {
        self.shared.blocked.store(true, Ordering::SeqCst);
        self.shared.cut.send_modify(|g| *g += 1);
    }

    /// Lets connections through again.
    pub fn unblock(&self) {
        self.shared.blocked.store(false, Ordering::SeqCst);
    }

    /// Holds each chunk of the upstream's answers back for `delay` (zero: none).
    pub fn delay_answers(&self, delay: Duration) {
        let ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        self.shared.delay_ms.store(ms, Ordering::SeqCst);
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.block();
        self.accept.abort();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    while let Ok((client, _)) = listener.accept().await {
        if shared.blocked.load(Ordering::SeqCst) {
            drop(client);
            continue;
        }
        tokio::spawn(relay_one(client, shared.clone()));
    }
}

async fn relay_one(client: TcpStream, shared: Arc<Shared>) {
    let Ok(upstream) = TcpStream::connect(&shared.upstream).await else {
        return;
    };
    let (client_read, client_write) = client.into_split();
    let (up_read, up_write) = upstream.into_split();
    let cut = shared.cut.subscribe();
    let to_upstream = pump(client_read, up_write, cut.clone(), None);
    let to_client = pump(up_read, client_write, cut, Some(shared.clone()));
    tokio::join!(to_upstream, to_client);
}

/// Copies `from` to `to` until either side closes or the relay is cut; chunks are held back
/// by the relay's delay when `delayed` is given.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut cut: watch::Receiver<u64>,
    delayed: Option<Arc<Shared>>,
) {
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = tokio::select! {
            read = from.read(&mut buf) => match read {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            },
            _ = cut.changed() => break,
        };
        if let Some(shared) = &delayed {
            let ms = shared.delay_ms.load(Ordering::SeqCst);
            if ms > 0 {
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
        }
        if cut.has_changed().unwrap_or(true) || to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}

/// `url` with its `host:port` swapped for the local relay port; and the `host:port` it had.
pub fn through_relay(url: &str, port: u16) -> (String, String) {
    let (scheme, rest) = url.split_once("://").unwrap_or_else(|| panic!("{url}"));
    let (creds, hostpart) = rest.rsplit_once('@').map_or(("", rest), |(c, h)| (c, h));
    let end = hostpart.find(['/', '?']).unwrap_or(hostpart.len());
    let (host, tail) = hostpart.split_at(end);
    let at = if creds.is_empty() { "" } else { "@" };
    (
        format!("{scheme}://{creds}{at}127.0.0.1:{port}{tail}"),
        host.to_owned(),
    )
}
