//! Turning what the server said into an error message we may store and show: untrusted text,
//! cleaned and bounded, and never holding one of our secrets.

use tasklatch_core::policy::{bounded, MAX_SHOWN_ERROR};

/// Characters of the server's own words kept in one error message.
pub const MAX_DETAIL_CHARS: usize = 200;

/// Secrets shorter than this are not searched for (a one-letter value would redact everything);
/// header values that short are not credentials anyway.
const MIN_REDACTABLE: usize = 4;

/// Removes our secrets (the configured header values) from untrusted text, flattens control
/// characters, and bounds it.
#[derive(Clone, Default)]
pub struct Redactor {
    secrets: Vec<String>,
}

impl Redactor {
    /// A redactor for these secret values.
    pub fn new(secrets: impl IntoIterator<Item = String>) -> Self {
        let mut secrets: Vec<String> = secrets
            .into_iter()
            .filter(|s| s.len() >= MIN_REDACTABLE)
            .collect();
        // Longest first, so a secret that contains another is cut out whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        Redactor { secrets }
    }

    /// `text` with every secret replaced by `[redacted]`, control characters (newlines too)
    /// replaced by spaces, cut to [`MAX_DETAIL_CHARS`] characters (`…` marks a cut).
    pub fn detail(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), "[redacted]");
            }
        }
        let flat: String = out
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
    /// Agent Server's error shape), else the start of the body as text, else `(empty body)`.
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
                let head = &body[..body.len().min(4 * MAX_DETAIL_CHARS)];
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
