//! A scripted fake MCP server for the fault tests: each request is answered by a handler that
//! sees the JSON-RPC method and request; `None` keeps the connection open without answering
//! (a server that accepts TCP and never answers).
#![allow(dead_code)]

use serde_json::{json, Value};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// What the fake answers: status, content type, body.
pub type Answer = (u16, &'static str, Vec<u8>);
/// The script: method and request in, an answer (or silence) out.
pub type Handler = Arc<dyn Fn(&str, &Value) -> Option<Answer> + Send + Sync>;

/// Requests larger than this are not read (the fake's own bound).
const MAX_REQUEST: usize = 1 << 20;

/// Serves `handler` on a free port until the test ends; returns the `/mcp` URL.
pub async fn serve(handler: Handler) -> String {
    serve_delayed(handler, Arc::new(|_| std::time::Duration::ZERO)).await
}

/// When an answer is sent: after `delay(method)`.
pub type Delay = Arc<dyn Fn(&str) -> std::time::Duration + Send + Sync>;

/// As [`serve`], each answer sent after `delay(method)`.
pub async fn serve_delayed(handler: Handler, delay: Delay) -> String {
    listen(handler, delay, String::new()).await
}

/// As [`serve`], each answer also carrying the header `name: value` (a session id, say).
pub async fn serve_with_header(handler: Handler, name: &str, value: &str) -> String {
    let delay: Delay = Arc::new(|_| std::time::Duration::ZERO);
    listen(handler, delay, format!("{name}: {value}\r\n")).await
}

/// Serves `handler` with `delay`, each answer's head holding the header lines `headers`
/// (each ended by CRLF) before `connection: close`; returns the `/mcp` URL.
async fn listen(handler: Handler, delay: Delay, headers: String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
    let url = format!("http://{}/mcp", listener.local_addr().expect("an address"));
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let handler = handler.clone();
            let delay = delay.clone();
            let headers = headers.clone();
            tokio::spawn(async move {
                let Some(request) = read_request(&mut sock).await else {
                    return;
                };
                let method = request["method"].as_str().unwrap_or("").to_owned();
                let Some((status, ctype, body)) = handler(&method, &request) else {
                    tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
                    return;
                };
                tokio::time::sleep(delay(&method)).await;
                let head = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\n{headers}connection: close\r\n\r\n",
                    body.len()
                );
                let _ = sock.write_all(head.as_bytes()).await;
                let _ = sock.write_all(&body).await;
            });
        }
    });
    url
}

async fn read_request(sock: &mut tokio::net::TcpStream) -> Option<Value> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while buf.len() < MAX_REQUEST {
        let n = sock.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf).to_string();
        let Some(end) = text.find("\r\n\r\n") else {
            continue;
        };
        let length = text[..end]
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .map(|v| v.trim().parse::<usize>().ok())
            })
            .flatten()
            .unwrap_or(0);
        if buf.len() >= end + 4 + length {
            return serde_json::from_slice(&buf[end + 4..end + 4 + length]).ok();
        }
    }
    None
}

/// A JSON `result` answer to `request`.
pub fn result(request: &Value, result: Value) -> Answer {
    let body = json!({"jsonrpc": "2.0", "id": request["id"], "result": result});
    (200, "application/json", body.to_string().into_bytes())
}

/// A healthy `server/discover` answer (tasks extension).
pub fn discover(request: &Value) -> Answer {
    result(
        request,
        json!({"ttlMs": 0, "cacheScope": "private", "supportedVersions": ["2026-07-28"],
        "capabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}, "resultType": "complete"}),
    )
}

/// A task in `status` with the id `id`.
pub fn task(id: &str, status: &str) -> Value {
    json!({"taskId": id, "status": status, "createdAt": "2026-12-03T08:00:00+00:00",
        "lastUpdatedAt": "2026-12-03T08:00:01+00:00", "ttlMs": 900000, "pollIntervalMs": 200, "resultType": "complete"})
}

/// HTTP 503 with a JSON-RPC -32603 body.
pub fn internal_error(request: &Value) -> Answer {
    let body = json!({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32603, "message": "deploying"}});
    (503, "application/json", body.to_string().into_bytes())
}

/// An ingress's 404 page.
pub fn html_404() -> Answer {
    (
        404,
        "text/html",
        b"<html><body>404 Not Found</body></html>".to_vec(),
    )
}
