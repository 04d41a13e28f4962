//! Request/response over simulated TCP: one connection per call, length-prefixed JSON frames,
//! a deadline on the whole call.
//!
//! A turmoil TCP stream that lost a segment stalls forever (there is no retransmission), so no
//! connection outlives its call: a partition or a dropped reply costs one call its deadline,
//! never a stuck client. Connections are made inside the host, so a restarted host starts clean.

use serde::de::DeserializeOwned;
use serde::Serialize;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use turmoil::net::{TcpListener, TcpStream};

/// The port every service listens on.
pub const PORT: u16 = 7000;

/// Frames larger than this are refused (a hostile peer must not make us allocate at will).
const MAX_FRAME: u32 = 8 * 1024 * 1024;

/// Why a call failed.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum CallError {
    /// No answer before the deadline (lost request, lost reply, partition, slow peer).
    #[error("timed out")]
    Timeout,
    /// The connection failed.
    #[error("connection failed: {0}")]
    Connection(String),
    /// The answer could not be decoded.
    #[error("bad answer: {0}")]
    Decode(String),
}

async fn write_frame(stream: &mut TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    let len = u32::try_from(bytes.len()).map_err(|_| std::io::Error::other("frame too large"))?;
    stream.write_all(&len.to_be_bytes()).await?;
    stream.write_all(bytes).await?;
    stream.flush().await
}

async fn read_frame(stream: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).await?;
    let len = u32::from_be_bytes(len);
    if len > MAX_FRAME {
        return Err(std::io::Error::other("frame too large"));
    }
    let mut buf = vec![0u8; len as usize];
    stream.read_exact(&mut buf).await?;
    Ok(buf)
}

/// Sends `req` to `host` and waits for its answer, all within `deadline`.
pub async fn call<Req: Serialize, Resp: DeserializeOwned>(
    host: &str,
    req: &Req,
    deadline: Duration,
) -> Result<Resp, CallError> {
    let body = serde_json::to_vec(req).map_err(|e| CallError::Decode(e.to_string()))?;
    let exchange = async {
        let mut stream = TcpStream::connect((host, PORT))
            .await
            .map_err(|e| CallError::Connection(e.to_string()))?;
        write_frame(&mut stream, &body)
            .await
            .map_err(|e| CallError::Connection(e.to_string()))?;
        let answer = read_frame(&mut stream)
            .await
            .map_err(|e| CallError::Connection(e.to_string()))?;
        serde_json::from_slice(&answer).map_err(|e| CallError::Decode(e.to_string()))
    };
    match tokio::time::timeout(deadline, exchange).await {
        Ok(result) => result,
        Err(_) => Err(CallError::Timeout),
    }
}

/// What a handler does with one request: answer it, or drop the reply (after doing the work).
pub enum Reply<T> {
    /// Send this answer.
    Send(T),
    /// Close the connection without answering.
    Drop,
}

/// Accepts connections forever; each request is handled by `handle` on its own local task.
pub async fn serve<Req, Resp, F, Fut>(handle: F) -> turmoil::Result
where
    Req: DeserializeOwned + 'static,
    Resp: Serialize + 'static,
    F: Fn(Req) -> Fut + Clone + 'static,
    Fut: std::future::Future<Output = Reply<Resp>> + 'static,
{
    let listener = TcpListener::bind(("0.0.0.0", PORT)).await?;
    loop {
        let (mut stream, _) = listener.accept().await?;
        let handle = handle.clone();
        tokio::task::spawn_local(async move {
            let Ok(bytes) = read_frame(&mut stream).await else {
                return;
            };
            let Ok(req) = serde_json::from_slice::<Req>(&bytes) else {
                return;
            };
            if let Reply::Send(answer) = handle(req).await {
                if let Ok(body) = serde_json::to_vec(&answer) {
                    let _ = write_frame(&mut stream, &body).await;
                }
            }
        });
    }
}
