//! A bounded reader of a `text/event-stream` body: events are split off as bytes arrive, and
//! the total read is capped, so a server that streams forever or sends one giant event stops
//! being read at the limit instead of filling memory.

/// Splits a byte stream into the `data` of its events.
pub(crate) struct SseReader {
    pending: Vec<u8>,
    read: usize,
    limit: usize,
}

/// The stream went past its byte limit.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct TooLarge;

impl SseReader {
    /// A reader that accepts at most `limit` bytes in all.
    pub(crate) fn new(limit: usize) -> Self {
        SseReader {
            pending: Vec::new(),
            read: 0,
            limit,
        }
    }

    /// Takes the next chunk; returns the data of every event it completed (events with no
    /// data, such as a stream's priming event, are skipped).
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Result<Vec<String>, TooLarge> {
        self.read += chunk.len();
        if self.read > self.limit {
            return Err(TooLarge);
        }
        self.pending.extend_from_slice(chunk);
        let mut events = Vec::new();
        while let Some((end, skip)) = event_end(&self.pending) {
            let raw: Vec<u8> = self.pending.drain(..end + skip).take(end).collect();
            if let Some(data) = event_data(&String::from_utf8_lossy(&raw)) {
                events.push(data);
            }
        }
        Ok(events)
    }
}

/// Where the first complete event ends (before its blank line) and the blank line's length.
fn event_end(buf: &[u8]) -> Option<(usize, usize)> {
    let lf = find(buf, b"\n\n").map(|i| (i, 2));
    let crlf = find(buf, b"\r\n\r\n").map(|i| (i, 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The event's `data` lines joined by newlines; `None` when it has no non-empty data.
fn event_data(event: &str) -> Option<String> {
    let lines: Vec<&str> = event
        .lines()
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| d.strip_prefix(' ').unwrap_or(d))
        .collect();
    let data = lines.join("\n");
    (!data.trim().is_empty()).then_some(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_events_across_chunks_and_skips_priming_events() {
        let mut r = SseReader::new(1_000);
        assert_eq!(
            r.push(b"id: 1\ndata: \n\nevent: message\nid: 2\nda")
                .unwrap(),
            Vec::<String>::new()
        );
        assert_eq!(
            r.push(b"ta: {\"a\":1}\n\n").unwrap(),
            vec!["{\"a\":1}".to_owned()]
        );
        assert_eq!(
            r.push(b"data: x\r\ndata: y\r\n\r\n").unwrap(),
            vec!["x\ny".to_owned()]
        );
    }

    #[test]
    fn stops_at_the_limit() {
        let mut r = SseReader::new(10);
        assert!(r.push(b"data: 1234").is_ok());
        assert_eq!(r.push(b"5"), Err(TooLarge));
    }
}
