//! Making untrusted text safe where the panel writes it: HTML text and attribute values
//! ([`html`]) and URL path segments ([`segment`]). Every text of a page goes through one of
//! them, remote-derived text included (already neutralised by the public shapes: no control or
//! bidirectional formatting characters).

use std::fmt::Write;

/// `text` safe as element text and as a quoted attribute value
/// ([`tasklatch_core::text::escape_html`]).
pub fn html(text: &str) -> String {
    tasklatch_core::text::escape_html(text)
}

/// `text` as one URL path segment: every byte but RFC 3986's unreserved characters
/// (`A-Z a-z 0-9 - . _ ~`) percent-encoded, so a `/`, `?`, `#` or quote of a thread id stays
/// inside the segment. The result is ASCII and needs no HTML escaping.
pub fn segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            // Writing to a String cannot fail.
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_keeps_only_unreserved_bytes() {
        assert_eq!(segment("t-1_a.b~"), "t-1_a.b~");
        assert_eq!(segment("a/b?c#d e\"é"), "a%2Fb%3Fc%23d%20e%22%C3%A9");
        assert_eq!(segment(".."), "..");
    }
}
