//! The one HTTP seam over the simulated network: the production client (`tasklatch-http`)
//! dials a turmoil host through `TurmoilConnector` and gets its answers, its byte-limit refusals
//! and its deadlines — the deadline on simulated time.

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Duration;
use tasklatch_http::{Client, ClientConfig, HttpError, Request};
use tasklatch_sim::net::TurmoilConnector;

const PORT: u16 = 8080;
const TIMEOUT: Duration = Duration::from_secs(2);
/// Bytes `/big` streams, in 1 KiB chunks without a `Content-Length`.
const BIG: usize = 64 << 10;

type Answer = hyper::Response<BoxBody<Bytes, Infallible>>;

/// `/hello` answers "hello", `/big` streams [`BIG`] bytes, `/never` never answers, `/moved` is
/// a redirect to `/hello`.
async fn answer(request: hyper::Request<Incoming>) -> Result<Answer, Infallible> {
    let full = |status: u16, body: &'static str| {
        let mut response = hyper::Response::new(Full::new(Bytes::from(body)).boxed());
        *response.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or_default();
        response
    };
    Ok(match request.uri().path() {
        "/hello" => full(200, "hello"),
        "/big" => {
            let chunks = (0..BIG / 1024).map(|_| Ok(Frame::data(Bytes::from(vec![b'x'; 1024]))));
            hyper::Response::new(StreamBody::new(futures::stream::iter(chunks)).boxed())
        }
        "/never" => std::future::pending().await,
        "/moved" => {
            let mut response = full(302, "");
            let location = hyper::header::HeaderValue::from_static("/hello");
            response.headers_mut().insert("location", location);
            response
        }
        _ => full(404, "no such path"),
    })
}

/// The server host: HTTP/1.1 on a turmoil listener.
async fn serve() -> turmoil::Result {
    let listener =
        turmoil::net::TcpListener::bind((IpAddr::V4(Ipv4Addr::UNSPECIFIED), PORT)).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        tokio::spawn(async move {
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service_fn(answer));
            let _ = connection.await;
        });
    }
}

/// A minute of simulated time with the test server on host `server`.
fn world() -> turmoil::Sim<'static> {
    let mut sim = turmoil::Builder::new()
        .simulation_duration(Duration::from_secs(60))
        .build();
    sim.host("server", serve);
    sim
}

fn url(path: &str) -> String {
    format!("http://server:{PORT}{path}")
}

#[test]
fn the_production_client_over_turmoil_answers_refuses_and_times_out() {
    let mut sim = world();
    sim.client("client", async {
        let client = Client::new(ClientConfig::new(TIMEOUT), Arc::new(TurmoilConnector));

        let hello = client.send(Request::get(url("/hello"))).await?;
        assert_eq!(hello.status(), 200);
        assert_eq!(hello.bytes_limited(100).await?, b"hello");

        let big = client.send(Request::get(url("/big"))).await?;
        assert_eq!(
            big.content_length(),
            None,
            "streamed, so refused while reading"
        );
        assert_eq!(
            big.bytes_limited(4096).await,
            Err(HttpError::TooLarge(4096))
        );

        let moved = client.send(Request::get(url("/moved"))).await?;
        assert_eq!(moved.status(), 302, "a redirect is an answer, not followed");

        let started = tokio::time::Instant::now();
        let never = client.send(Request::get(url("/never"))).await;
        assert_eq!(never.err(), Some(HttpError::Timeout));
        let took = started.elapsed();
        assert!(
            took >= TIMEOUT && took < TIMEOUT + Duration::from_secs(1),
            "{took:?}"
        );

        let nowhere = client.send(Request::get("http://nowhere:8080/")).await;
        match nowhere {
            Err(HttpError::Connect(why)) => assert!(!why.contains("nowhere"), "{why}"),
            other => panic!("expected a connect error, got {other:?}"),
        }
        assert_eq!(client.sent(), 5);
        Ok(())
    });
    sim.run().expect("the simulation passes");
}

#[test]
fn a_partitioned_server_is_a_timeout_on_simulated_time() {
    let mut sim = world();
    sim.client("client", async {
        let client = Client::new(ClientConfig::new(TIMEOUT), Arc::new(TurmoilConnector));
        let hello = client.send(Request::get(url("/hello"))).await?;
        assert_eq!(hello.bytes_limited(100).await?, b"hello");
        turmoil::hold("client", "server");
        let started = tokio::time::Instant::now();
        let held = client.send(Request::get(url("/hello"))).await;
        assert_eq!(held.err(), Some(HttpError::Timeout));
        assert!(started.elapsed() >= TIMEOUT);
        turmoil::release("client", "server");
        let again = client.send(Request::get(url("/hello"))).await?;
        assert_eq!(again.bytes_limited(100).await?, b"hello");
        Ok(())
    });
    sim.run().expect("the simulation passes");
}
