//! Turning what the server said into an error message we may store and show: untrusted text,
//! cleaned and bounded, and never holding one of our secrets — nor a fragment of one.
//!
//! Redaction is core's ([`tasklatch_core::redaction::redact`], the rules used for remote ids):
//! whole secrets, short ones standing as a token, and any token-like piece of
//! [`tasklatch_core::redaction::FRAGMENT`] bytes, so a truncated or partial echo of a header
//! value is cut too. Text is redacted before it is cut to length, so a cut never leaves a
//! secret's head behind.

use tasklatch_core::policy::{bounded, MAX_SHOWN_ERROR};
use tasklatch_core::redaction::redact;

/// Characters of the server's own words kept in one error message.
pub const MAX_DETAIL_CHARS: usize = 200;

/// Bytes of a body that is not the server's JSON error shape read for a message (before
/// redaction; the longest secret is read beyond it, so one crossing the limit is cut whole).
const BODY_HEAD_BYTES: usize = 4 * MAX_DETAIL_CHARS;

/// Removes our secrets (the configured header values) from untrusted text, flattens control
/// characters, and bounds it.
#[derive(Clone, Default)]
pub struct Redactor {
    secrets: Vec<String>,
}

impl Redactor {
    /// A redactor for these secret values (empty ones are ignored).
    pub fn new(secrets: impl IntoIterator<Item = String>) -> Self {
        let secrets = secrets.into_iter().filter(|s| !s.is_empty()).collect();
        Redactor { secrets }
    }

    /// `text` with every secret and token-like fragment of one replaced by `[redacted]`,
    /// control characters (newlines too) replaced by spaces, then cut to [`MAX_DETAIL_CHARS`]
    /// characters (`…` marks a cut).
    pub fn detail(&self, text: &str) -> String {
        let secrets: Vec<&str> = self.secrets.iter().map(String::as_str).collect();
        let flat: String = redact(text, &secrets)
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let trimmed = flat.trim();
        let cut = bounded(trimmed, MAX_DETAIL_CHARS);
        if cut.len() < trimmed.len() {
            format!("{cut}…")
        } else {
            cut
        }
    }

    /// The server's words from an error answer: its JSON `detail` field when it has one (the
    /// Agent Server's error shape), else the start of the body as text (its first
    /// [`BODY_HEAD_BYTES`] bytes and the longest secret's length more, redacted, then cut), else
    /// `(empty body)`.
    pub fn body_detail(&self, body: &[u8]) -> String {
        if body.iter().all(u8::is_ascii_whitespace) {
            return "(empty body)".to_owned();
        }
        let detail = serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|v| v.get("detail").map(|d| d.to_string()));
        match detail {
            Some(d) => self.detail(d.trim_matches('"')),
            None => {
                let longest = self.secrets.iter().map(String::len).max().unwrap_or(0);
                let head = &body[..body.len().min(BODY_HEAD_BYTES + longest)];
                self.detail(&String::from_utf8_lossy(head))
            }
        }
    }
}

/// A launcher failure as the engine stores it: `agent server: {what}`, bounded to
/// [`MAX_SHOWN_ERROR`] characters.
pub fn failure(what: impl std::fmt::Display) -> String {
    bounded(&format!("agent server: {what}"), MAX_SHOWN_ERROR)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_cut_before_the_text_is_bounded() {
        let r = Redactor::new(["sk-SECRET-1234".to_owned(), "ab".to_owned()]);
        let text = format!("{}sk-SECRET-1234\nlabel ab", "x".repeat(190));
        let d = r.detail(&text);
        assert!(!d.contains("sk-SECRET"), "{d}");
        assert!(d.contains("ab") || d.ends_with('…'));
        assert!(d.chars().count() <= MAX_DETAIL_CHARS + 1);
        assert!(!d.contains('\n'));
    }

    /// Issue 22 LOW: a secret crossing the body's read limit, and a partial echo of one, are
    /// cut (whole-string matching after the cut showed their heads).
    #[test]
    fn fragments_and_secrets_at_the_cut_are_redacted() {
        let key = "sk-PLANTED-API-KEY-0453";
        let r = Redactor::new([format!("Bearer {key}")]);
        let at_the_cut = format!("{}Bearer {key}</p>", " ".repeat(4 * MAX_DETAIL_CHARS - 12));
        let d = r.body_detail(at_the_cut.as_bytes());
        assert!(!d.contains("PLANTED") && !d.contains("sk-"), "{d}");
        let partial = "<p>refused key sk-PLANTED-API for this route</p>";
        let d = r.body_detail(partial.as_bytes());
        assert!(!d.contains("PLANTED"), "{d}");
        assert!(d.contains("for this route"), "{d}");
    }

    #[test]
    fn the_detail_field_is_preferred_and_html_is_cut_short() {
        let r = Redactor::default();
        assert_eq!(
            r.body_detail(br#"{"detail":"Thread or assistant not found."}"#),
            "Thread or assistant not found."
        );
        let html = format!("<html><body>{}</body></html>", "<p>oops</p>".repeat(500));
        let d = r.body_detail(html.as_bytes());
        assert!(d.starts_with("<html>") && d.ends_with('…'), "{d}");
        assert_eq!(r.body_detail(b" "), "(empty body)");
        assert!(failure("x".repeat(2_000)).chars().count() <= MAX_SHOWN_ERROR);
    }
}
