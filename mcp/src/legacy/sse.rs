//! A bounded reader of a `text/event-stream` body: events are split off as bytes arrive, and
//! the total read is capped, so a server that streams forever or sends one giant event stops
//! being read at the limit instead of filling memory.

/// Bytes of an event terminator (`\r\n\r\n`) less one: how far back a scan starts before the
/// bytes not yet scanned, so a terminator split across chunks is found.
const TERMINATOR_OVERLAP: usize = 3;

/// Splits a byte stream into the `data` of its events. Each byte is scanned for an event end
/// a bounded number of times (only new bytes, plus [`TERMINATOR_OVERLAP`]), so reading is
/// linear in the stream's length however the server chunks it.
pub(crate) struct SseReader {
    pending: Vec<u8>,
    /// The prefix of `pending` known to hold no complete terminator.
    scanned: usize,
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
            scanned: 0,
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
        loop {
            let from = self.scanned.saturating_sub(TERMINATOR_OVERLAP);
            let Some((end, skip)) = event_end(&self.pending[from..]) else {
                self.scanned = self.pending.len();
                return Ok(events);
            };
            let raw: Vec<u8> = self
                .pending
                .drain(..from + end + skip)
                .take(from + end)
                .collect();
            self.scanned = 0;
            if let Some(data) = event_data(&String::from_utf8_lossy(&raw)) {
                events.push(data);
            }
        }
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

    /// Issue 22 item 11: a hostile server streaming 1 MiB without an event end, in 64-byte
    /// chunks, is read in linear time (each byte scanned a bounded number of times).
    #[test]
    fn a_mebibyte_without_an_event_end_is_scanned_in_linear_time() {
        const SIZE: usize = 1 << 20;
        let mut r = SseReader::new(SIZE);
        let chunk = [b'x'; 64];
        let started = std::time::Instant::now();
        for _ in 0..SIZE / chunk.len() {
            assert_eq!(r.push(&chunk), Ok(Vec::new()));
        }
        let took = started.elapsed();
        println!("1 MiB in 64-byte chunks without an event end: {took:?}");
        assert!(took < std::time::Duration::from_millis(100), "{took:?}");
    }

    #[test]
    fn a_terminator_split_across_chunks_is_found() {
        for split in ["data: a\n", "data: a\r\n", "data: a\r\n\r"] {
            let whole = "data: a\r\n\r\n".replace(
                "\r\n\r\n",
                if split.contains('\r') {
                    "\r\n\r\n"
                } else {
                    "\n\n"
                },
            );
            let mut r = SseReader::new(1_000);
            assert_eq!(r.push(split.as_bytes()), Ok(Vec::new()));
            let rest = &whole.as_bytes()[split.len()..];
            assert_eq!(r.push(rest), Ok(vec!["a".to_owned()]), "{split:?}");
        }
    }

    #[test]
    fn stops_at_the_limit() {
        let mut r = SseReader::new(10);
        assert!(r.push(b"data: 1234").is_ok());
        assert_eq!(r.push(b"5"), Err(TooLarge));
    }
}
