//! A tiny HTTP/1.1 server for the answers a real Agent Server does not give: HTML error pages,
//! huge bodies, runs without ids, answers past the timeout. One request per connection
//! (`Connection: close`); every request is recorded.

use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// A request as the fake saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

/// What the fake answers.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
    /// Extra bytes streamed after `body` without a Content-Length (`None`: a normal answer).
    pub stream_extra: Option<usize>,
    /// Sleep this long before answering.
    pub delay: Duration,
    pub location: Option<String>,
}

impl Reply {
    pub fn json(status: u16, body: &str) -> Reply {
        Reply {
            status,
            content_type: "application/json",
            body: body.as_bytes().to_vec(),
            stream_extra: None,
            delay: Duration::ZERO,
            location: None,
        }
    }

    pub fn html(status: u16, body: &str) -> Reply {
        Reply {
            content_type: "text/html",
            ..Reply::json(status, body)
        }
    }
}

/// Decides the reply to each request.
pub type Handler = Arc<dyn Fn(&Seen) -> Reply + Send + Sync>;

/// A running fake; stops when dropped.
pub struct Fake {
    pub base_url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    task: JoinHandle<()>,
}

impl Fake {
    pub async fn start(handler: Handler) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("bind: {e}"));
        let addr = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("local addr: {e}"));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, handler.clone(), log.clone()));
            }
        });
        Fake {
            base_url: format!("http://{addr}"),
            seen,
            task,
        }
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(mut stream: TcpStream, handler: Handler, log: Arc<Mutex<Vec<Seen>>>) {
    let Some(seen) = read_request(&mut stream).await else {
        return;
    };
    log.lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(seen.clone());
    let reply = handler(&seen);
    tokio::time::sleep(reply.delay).await;
    let _ = write_reply(&mut stream, &reply).await;
}

async fn read_request(stream: &mut TcpStream) -> Option<Seen> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 || buf.len() > 1 << 20 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, path) = (first.next()?.to_owned(), first.next()?.to_owned());
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(Seen {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

async fn write_reply(stream: &mut TcpStream, reply: &Reply) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {} Fake\r\ncontent-type: {}\r\nconnection: close\r\n",
        reply.status, reply.content_type
    );
    if let Some(location) = &reply.location {
        head.push_str(&format!("location: {location}\r\n"));
    }
    if reply.stream_extra.is_none() {
        head.push_str(&format!("content-length: {}\r\n", reply.body.len()));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(&reply.body).await?;
    if let Some(extra) = reply.stream_extra {
        let block = vec![b'x'; 16 * 1024];
        let mut left = extra;
        while left > 0 {
            let n = left.min(block.len());
            stream.write_all(&block[..n]).await?;
            left -= n;
        }
    }
    stream.shutdown().await
}
