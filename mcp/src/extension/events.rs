//! The events of a streamed (`text/event-stream`) answer, each bounded in bytes as its bytes
//! arrive — before the SSE parser holds them — so a server sending one endless event stops
//! being read at the limit.

use futures::stream::{BoxStream, StreamExt};
use rmcp::transport::streamable_http_client::SseError;
use sse_stream::{Sse, SseStream};
use tasklatch_http::http::header::HeaderValue;
use tasklatch_http::HttpError;

/// The body's chunks, parsed into events of at most `max_event` raw bytes each (comment lines
/// not counted). An event over the limit ends the stream with [`HttpError::TooLarge`] inside
/// the SSE error.
pub(super) fn bounded_events(
    chunks: BoxStream<'static, Result<bytes::Bytes, HttpError>>,
    max_event: usize,
) -> BoxStream<'static, Result<Sse, SseError>> {
    let limited = futures::stream::unfold(
        (chunks, EventLimit::new(max_event), false),
        |(mut chunks, mut limit, failed)| async move {
            if failed {
                return None;
            }
            let item = chunks.next().await?;
            let item = item.and_then(|chunk| limit.observe(&chunk).map(|()| chunk));
            let failed = item.is_err();
            Some((item, (chunks, limit, failed)))
        },
    );
    SseStream::from_bytes_stream(Box::pin(limited)).boxed()
}

/// Whether a `Content-Type` is `expected` (case-insensitive, parameters ignored).
pub(super) fn media_type_is(value: &HeaderValue, expected: &str) -> bool {
    value
        .to_str()
        .ok()
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case(expected))
}

/// Counts the bytes of the current event: lines since the last blank line.
struct EventLimit {
    max: usize,
    event: usize,
    line: usize,
    comment: bool,
    after_cr: bool,
}

impl EventLimit {
    fn new(max: usize) -> Self {
        EventLimit {
            max,
            event: 0,
            line: 0,
            comment: false,
            after_cr: false,
        }
    }

    /// Takes the next chunk; `TooLarge` once the current event passes the limit.
    fn observe(&mut self, chunk: &[u8]) -> Result<(), HttpError> {
        for &byte in chunk {
            let after_cr = std::mem::replace(&mut self.after_cr, byte == b'\r');
            match byte {
                b'\n' if after_cr => {}
                b'\r' | b'\n' => self.end_line(),
                _ => {
                    if self.line == 0 {
                        self.comment = byte == b':';
                    }
                    self.line += 1;
                }
            }
            if self.event.saturating_add(self.line) > self.max {
                return Err(HttpError::TooLarge(self.max));
            }
        }
        Ok(())
    }

    /// A line ended: a blank one ends the event, a comment is not kept by the parser.
    fn end_line(&mut self) {
        if self.line == 0 {
            self.event = 0;
        } else if !self.comment {
            self.event = self.event.saturating_add(self.line + 1);
        }
        self.line = 0;
        self.comment = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_event_is_bounded_not_the_stream() {
        let mut limit = EventLimit::new(12);
        for _ in 0..100 {
            assert_eq!(limit.observe(b"data: 12345\r\n\r\n"), Ok(()));
        }
        assert_eq!(
            limit.observe(b": ping\n: ping\n"),
            Ok(()),
            "comments are not kept"
        );
        assert_eq!(
            limit.observe(b"data: 1\ndata: 2345"),
            Err(HttpError::TooLarge(12))
        );
    }

    #[tokio::test]
    async fn an_endless_event_ends_the_stream_with_too_large() {
        let endless = futures::stream::iter(std::iter::repeat_n(
            Ok(bytes::Bytes::from_static(b"data: xxxxxxxx")),
            1000,
        ))
        .boxed();
        let mut events = bounded_events(endless, 100);
        let Some(Err(SseError::Body(e))) = events.next().await else {
            panic!("expected an error");
        };
        assert_eq!(
            e.downcast_ref::<HttpError>(),
            Some(&HttpError::TooLarge(100))
        );
        assert!(events.next().await.is_none());
    }
}
