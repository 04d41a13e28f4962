//! A minimal blocking HTTP/1.1 probe over `std::net`, for readiness checks only.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Sends `GET path` to `127.0.0.1:port` and returns the response's status code. `Err` when
/// nothing listens, the connection fails, or the answer is not HTTP.
pub fn http_get_status(port: u16, path: &str, timeout: Duration) -> Result<u16, String> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = TcpStream::connect_timeout(&addr, timeout).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(timeout))
        .and_then(|()| stream.set_write_timeout(Some(timeout)))
        .map_err(|e| e.to_string())?;
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|e| e.to_string())?;
    let mut head = [0u8; 64];
    let mut got = 0;
    while got < 12 {
        match stream.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) => return Err(e.to_string()),
        }
    }
    let text = std::str::from_utf8(&head[..got]).map_err(|_| "not HTTP".to_owned())?;
    let mut parts = text.split(' ');
    match (parts.next(), parts.next()) {
        (Some(v), Some(code)) if v.starts_with("HTTP/1.") => code
            .parse()
            .map_err(|_| format!("bad status line {text:?}")),
        _ => Err(format!("not an HTTP answer: {text:?}")),
    }
}
