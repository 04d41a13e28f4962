//! Why an exchange produced no answer, classified. The messages are fixed phrases plus, at
//! most, the innermost cause of a failure (an I/O or TLS error text such as "Connection refused
//! (os error 111)"): never the URL, never a header value.

use std::error::Error;
use std::io;

/// A failed exchange.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum HttpError {
    /// No complete answer (headers and body) within the request's deadline, or no connection
    /// within the connect timeout.
    #[error("no answer within the request timeout")]
    Timeout,
    /// The server could not be reached (refused, no route, DNS, TLS handshake).
    #[error("cannot connect: {0}")]
    Connect(String),
    /// The body is longer than the byte limit it was read with; reading stopped there.
    #[error("answer larger than {0} bytes, refused")]
    TooLarge(usize),
    /// The exchange broke off (reset, bad framing, a request that could not be built, …).
    #[error("exchange failed: {0}")]
    Transport(String),
}

/// A failure of hyper's client (sending the request, or waiting for the answer's head).
pub(crate) fn from_client(e: &hyper_util::client::legacy::Error) -> HttpError {
    if timed_out(e) {
        return HttpError::Timeout;
    }
    let why = innermost(e);
    if e.is_connect() {
        HttpError::Connect(why)
    } else {
        HttpError::Transport(why)
    }
}

/// A failure while reading a body.
pub(crate) fn from_body(e: &hyper::Error) -> HttpError {
    if e.is_timeout() || timed_out(e) {
        return HttpError::Timeout;
    }
    HttpError::Transport(innermost(e))
}

/// Whether an I/O timeout (the connect timeout) is somewhere in the chain.
fn timed_out(e: &(dyn Error + 'static)) -> bool {
    let mut current = Some(e);
    while let Some(error) = current {
        if error
            .downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::TimedOut)
        {
            return true;
        }
        current = error.source();
    }
    false
}

/// The text of the innermost cause: hyper's outer messages say only which step failed, the
/// innermost one says why (and neither names the URL).
fn innermost(e: &(dyn Error + 'static)) -> String {
    let mut last = e;
    while let Some(source) = last.source() {
        last = source;
    }
    last.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_innermost_cause_is_the_message() {
        #[derive(Debug, thiserror::Error)]
        #[error("outer step failed for http://secret.example/")]
        struct Outer(#[source] io::Error);
        let e = Outer(io::Error::new(io::ErrorKind::ConnectionRefused, "refused"));
        assert_eq!(innermost(&e), "refused");
        assert!(!timed_out(&e));
        let slow = Outer(io::Error::new(
            io::ErrorKind::TimedOut,
            "HTTP connect timeout",
        ));
        assert!(timed_out(&slow));
    }

    #[test]
    fn messages_are_fixed_phrases() {
        assert_eq!(
            HttpError::Timeout.to_string(),
            "no answer within the request timeout"
        );
        assert_eq!(
            HttpError::TooLarge(10).to_string(),
            "answer larger than 10 bytes, refused"
        );
    }
}
