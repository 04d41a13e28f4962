//! Text escaping: every string taken from a history, a plan or a verdict is hostile (forged
//! tags, NUL bytes, bidi overrides, endless payloads) and passes through here before it
//! reaches the page.
//!
//! Contract: the output of [`text`] and [`clipped`] contains no `<`, `>`, `&` (other than the
//! entities it writes), `"` or `'`, no control character (C0, DEL, C1 — a newline or tab in
//! the input becomes a space), no bidirectional control and no Unicode non-character. It is
//! therefore safe as element content and inside a quoted attribute value, in HTML and in XML.

use tasklatch_core::text::push_escaped;

/// Longest text, in characters, that one title line or table cell carries.
pub const MAX_TEXT_CHARS: usize = 240;

/// `s`, escaped (see the module contract), never longer than [`MAX_TEXT_CHARS`] characters of
/// input.
pub fn text(s: &str) -> String {
    clipped(s, MAX_TEXT_CHARS)
}

/// `s`, escaped, keeping at most `max_chars` of its (cleaned) characters; a clipped text ends
/// with `…`.
pub fn clipped(s: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max_chars.saturating_mul(2)) + 8);
    let mut kept = 0usize;
    for c in s.chars() {
        let c = match c {
            '\n' | '\r' | '\t' => ' ',
            c if dropped(c) => continue,
            c => c,
        };
        if kept == max_chars {
            out.push('…');
            return out;
        }
        kept += 1;
        push_escaped(&mut out, c);
    }
    out
}

/// Characters removed outright: controls, bidirectional overrides and isolates (which could
/// reorder what a maintainer reads), and non-characters (not allowed in XML).
fn dropped(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
        || matches!(c, '\u{FDD0}'..='\u{FDEF}')
        || (c as u32) & 0xFFFE == 0xFFFE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_is_neutralised() {
        assert_eq!(text("</svg><script>"), "&lt;/svg&gt;&lt;script&gt;");
        assert_eq!(text("a&b \"q\" 'x'"), "a&amp;b &quot;q&quot; &#39;x&#39;");
    }

    #[test]
    fn controls_and_bidi_are_removed() {
        assert_eq!(text("a\0b\u{7}c\u{202E}d\u{85}e\u{FFFF}"), "abcde");
        assert_eq!(text("line\nbreak\ttab"), "line break tab");
    }

    #[test]
    fn long_text_is_clipped() {
        assert_eq!(clipped("abcdef", 3), "abc…");
        assert_eq!(clipped("abc", 3), "abc");
        assert_eq!(clipped("<<<<", 2), "&lt;&lt;…");
    }
}
