//! What counts as a secret reaching an output (`Invariant::Sealed`).
//!
//! The remote handles' secrets are matched the way the engine must redact them
//! ([`tasklatch_core::redaction`]), written here independently so a redaction bug is not
//! shared by its judge: a secret from [`MIN_REDACTABLE`] bytes anywhere, any token-like
//! (not [`word_like`]) [`FRAGMENT`]-byte piece of a longer one anywhere, and a shorter one where
//! it stands as a whole token (a maximal run of alphanumeric characters; a short secret that is
//! not alphanumeric itself is matched anywhere). The users' answers are matched whole: the
//! engine redacts them whole.

use std::collections::BTreeSet;
use tasklatch_core::redaction::{word_like, FRAGMENT, MIN_REDACTABLE};

/// The secrets of a run, indexed for matching.
pub(super) struct Seal<'a> {
    /// Every token-like [`FRAGMENT`]-byte piece of a handle secret at least that long.
    pieces: BTreeSet<&'a [u8]>,
    /// Texts found anywhere: handle secrets from [`MIN_REDACTABLE`] bytes, short ones that are
    /// not alphanumeric, and the answers.
    anywhere: Vec<&'a str>,
    /// Short alphanumeric handle secrets, found as whole tokens.
    tokens: BTreeSet<&'a str>,
}

impl<'a> Seal<'a> {
    /// The seal of the remote handles' `secrets` and the users' `answers`.
    pub(super) fn new(secrets: &[&'a str], answers: &[&'a str]) -> Self {
        let mut seal = Seal {
            pieces: BTreeSet::new(),
            anywhere: answers.iter().copied().filter(|a| !a.is_empty()).collect(),
            tokens: BTreeSet::new(),
        };
        for s in secrets.iter().copied().filter(|s| !s.is_empty()) {
            if s.len() >= FRAGMENT {
                let token_like = s.as_bytes().windows(FRAGMENT).filter(|p| !word_like(p));
                seal.pieces.extend(token_like);
            }
            if s.len() >= MIN_REDACTABLE || !s.chars().all(char::is_alphanumeric) {
                seal.anywhere.push(s);
            } else {
                seal.tokens.insert(s);
            }
        }
        seal
    }

    /// Whether `text` shows a secret, or a piece of one.
    pub(super) fn leaks(&self, text: &str) -> bool {
        text.as_bytes()
            .windows(FRAGMENT)
            .any(|w| self.pieces.contains(w))
            || self.anywhere.iter().any(|s| text.contains(s))
            || text
                .split(|c: char| !c.is_alphanumeric())
                .any(|t| self.tokens.contains(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_short_tokens_and_answers_are_found_and_innocent_text_is_not() {
        let seal = Seal::new(
            &["drv-SECRET-0a1b2c/52820", "52820", "a-b"],
            &["answer-SECRET-owner-1"],
        );
        assert!(seal.leaks("data drv-SECRET-0a1b… cut short"));
        assert!(seal.leaks("{\"error\":\"task 52820 failed\"}"));
        assert!(seal.leaks("za-bz"));
        assert!(seal.leaks("you said answer-SECRET-owner-1."));
        assert!(!seal.leaks("528201 and 152820 and x52820 and drv-SEC 0a1b2c"));
        assert!(!seal.leaks("answer-SEC owner-1 [redacted]"));
        let words = Seal::new(&[r#"{"protocol":"extension"}"#], &[]);
        assert!(!words.leaks("the protocol extension"));
        assert!(words.leaks(r#"x{"protocol":"extension"}"#));
    }
}
