//! Untrusted text, made safe to put in an error or a report: the call's secrets cut out, control
//! characters replaced, the length bounded.
//!
//! Core redacts a task's handle from what it stores too, but only the handle as a whole; the
//! session id inside the driver data, and the configured header values, are known only here,
//! so every text this crate produces goes through a [`Redactor`] first.

use tasklatch_core::policy::bounded;
use tasklatch_core::redaction::redact;

/// Secrets shorter than this are not searched for (as in core): a short one would redact
/// ordinary words.
const MIN_SECRET: usize = 6;

/// The secrets one call must never echo.
#[derive(Clone, Default)]
pub(crate) struct Redactor {
    secrets: Vec<String>,
}

impl Redactor {
    /// Adds a secret (ignored when too short to search for).
    pub(crate) fn with(mut self, secret: &str) -> Self {
        if secret.len() >= MIN_SECRET {
            self.secrets.push(secret.to_owned());
        }
        self
    }

    /// Adds several secrets.
    pub(crate) fn with_all<'a>(mut self, secrets: impl IntoIterator<Item = &'a str>) -> Self {
        for s in secrets {
            self = self.with(s);
        }
        self
    }

    /// `text` with every secret replaced by `[redacted]` — whole or as a partial echo (any
    /// token-like 8-byte piece of a secret, by core's [`tasklatch_core::redaction`] rules) —
    /// control characters (but newlines and tabs) replaced by U+FFFD, cut to `max` characters.
    pub(crate) fn clean(&self, text: &str, max: usize) -> String {
        let out: String = text
            .chars()
            .map(|c| {
                if c.is_control() && c != '\n' && c != '\t' {
                    '\u{FFFD}'
                } else {
                    c
                }
            })
            .collect();
        let secrets: Vec<&str> = self.secrets.iter().map(String::as_str).collect();
        bounded(&redact(&out, &secrets), max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_cut_before_the_text_is_bounded() {
        let r = Redactor::default().with("task-SECRET").with("abc");
        assert_eq!(
            r.clean("x task-SECRET y abc\0", 100),
            "x [redacted] y abc\u{FFFD}"
        );
        // The secret straddles the bound: it is replaced first, so no prefix of it survives.
        assert_eq!(r.clean("zz task-SECRET", 8), "zz [reda");
    }

    /// Issue 22 (LOW): a header credential echoed in part (cut by a proxy or a log line) is
    /// redacted too, not only the whole value.
    #[test]
    fn fragments_of_a_header_credential_are_cut() {
        let r = Redactor::default().with("Bearer sk-live-4f9a8b7c6d5e4f3a2b1c");
        let text = r.clean("auth failed for token sk-live-4f9a8b7c6d5e…", 200);
        assert!(!text.contains("4f9a8b7c6d5e"), "{text}");
        assert!(text.contains("[redacted]"), "{text}");
    }
}
