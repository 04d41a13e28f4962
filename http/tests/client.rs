//! The client against a local TCP server that answers with canned bytes: answers, byte limits
//! while reading, deadlines, counting, redirects left alone, and error texts without the URL or
//! any header value.

use std::sync::Arc;
use std::time::Duration;
use tasklatch_http::http::HeaderValue;
use tasklatch_http::{Client, ClientConfig, HttpError, Request, TcpTls};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

const SECRET: &str = "Bearer sk-test-0123456789abcdef";

/// What the server does with one connection, after reading the request head.
#[derive(Clone, Copy)]
enum Behaviour {
    /// Answers with these bytes and closes.
    Answer(&'static str),
    /// Sends a chunked head, then chunks of 1 KiB for as long as the client reads.
    Endless,
    /// Reads the request and never answers.
    Silent,
    /// Sends the head with a body it never sends.
    HeadOnly,
}

/// A server on a free port; every request head it reads is sent to the returned channel.
async fn serve(behaviour: Behaviour) -> (String, mpsc::UnboundedReceiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/path", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(answer(stream, behaviour, tx.clone()));
        }
    });
    (url, rx)
}

async fn answer(mut stream: TcpStream, behaviour: Behaviour, heads: mpsc::UnboundedSender<String>) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await.unwrap_or(0) == 0 {
            return;
        }
        head.push(byte[0]);
    }
    let _ = heads.send(String::from_utf8_lossy(&head).into_owned());
    match behaviour {
        Behaviour::Answer(bytes) => {
            let _ = stream.write_all(bytes.as_bytes()).await;
        }
        Behaviour::Endless => {
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
                .await;
            let chunk = format!("400\r\n{}\r\n", "x".repeat(1024));
            while stream.write_all(chunk.as_bytes()).await.is_ok() {}
        }
        Behaviour::Silent => std::future::pending().await,
        Behaviour::HeadOnly => {
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n")
                .await;
            std::future::pending().await
        }
    }
}

fn client(timeout: Duration) -> Client {
    let mut config = ClientConfig::new(timeout);
    let mut secret = HeaderValue::from_static(SECRET);
    secret.set_sensitive(true);
    config.default_headers.insert("authorization", secret);
    config.reuse_connections = false;
    Client::new(config, Arc::new(TcpTls::new(None).unwrap()))
}

#[tokio::test]
async fn an_answer_is_read_with_the_default_headers_sent_and_the_request_counted() {
    let (url, mut heads) = serve(Behaviour::Answer(
        "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello",
    ))
    .await;
    let client = client(Duration::from_secs(5));
    let response = client
        .send(Request::post(&url).header("x-one", "1").body("{}"))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.bytes_limited(5).await.unwrap(), b"hello");
    assert_eq!(client.sent(), 1);
    let head = heads.recv().await.unwrap().to_ascii_lowercase();
    assert!(head.starts_with("post /path http/1.1"), "{head}");
    assert!(head.contains(&format!("authorization: {}", SECRET.to_ascii_lowercase())));
    assert!(head.contains("x-one: 1"), "{head}");
}

#[tokio::test]
async fn a_body_over_the_limit_is_refused_while_it_streams() {
    let (url, _heads) = serve(Behaviour::Endless).await;
    let client = client(Duration::from_secs(5));
    let response = client.send(Request::get(&url)).await.unwrap();
    let refused = tokio::time::timeout(Duration::from_secs(2), response.bytes_limited(64 << 10))
        .await
        .expect("refused before the endless body ends");
    assert_eq!(refused, Err(HttpError::TooLarge(64 << 10)));
}

#[tokio::test]
async fn a_declared_length_over_the_limit_is_refused_before_reading() {
    let (url, _heads) = serve(Behaviour::HeadOnly).await;
    let response = client(Duration::from_secs(5))
        .send(Request::get(&url))
        .await
        .unwrap();
    assert_eq!(response.bytes_limited(9).await, Err(HttpError::TooLarge(9)));
}

#[tokio::test]
async fn the_deadline_covers_the_head_and_the_body() {
    let timeout = Duration::from_millis(300);
    let (silent, _a) = serve(Behaviour::Silent).await;
    let started = tokio::time::Instant::now();
    let error = client(timeout).send(Request::get(&silent)).await.err();
    assert_eq!(error, Some(HttpError::Timeout));
    assert!(started.elapsed() < Duration::from_secs(2));

    let (head_only, _b) = serve(Behaviour::HeadOnly).await;
    let started = tokio::time::Instant::now();
    let response = client(timeout)
        .send(Request::get(&head_only))
        .await
        .unwrap();
    assert_eq!(response.bytes_limited(100).await, Err(HttpError::Timeout));
    let took = started.elapsed();
    assert!(took >= timeout && took < Duration::from_secs(2), "{took:?}");
}

#[tokio::test]
async fn a_redirect_is_an_answer_not_followed() {
    let (url, mut heads) = serve(Behaviour::Answer(
        "HTTP/1.1 302 Found\r\nlocation: http://127.0.0.1:1/elsewhere\r\ncontent-length: 0\r\n\r\n",
    ))
    .await;
    let client = client(Duration::from_secs(5));
    let response = client.send(Request::get(&url)).await.unwrap();
    assert_eq!(response.status(), 302);
    assert_eq!(client.sent(), 1);
    assert!(heads.recv().await.is_some());
    assert!(heads.try_recv().is_err(), "no second request");
}

#[tokio::test]
async fn failures_are_classified_without_the_url_or_a_header_value() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/secret-path", listener.local_addr().unwrap());
    drop(listener);
    let client = client(Duration::from_secs(5));
    let error = client.send(Request::get(&url)).await.unwrap_err();
    assert!(matches!(error, HttpError::Connect(_)), "{error:?}");
    let (reset, _heads) = serve(Behaviour::Answer("garbage\r\n\r\n")).await;
    let transport = client.send(Request::get(&reset)).await.unwrap_err();
    assert!(
        matches!(transport, HttpError::Transport(_)),
        "{transport:?}"
    );
    for text in [error.to_string(), transport.to_string()] {
        assert!(
            !text.contains("secret-path") && !text.contains("127.0.0.1"),
            "{text}"
        );
        assert!(!text.contains("sk-test"), "{text}");
    }
    assert_eq!(client.sent(), 2);
}
