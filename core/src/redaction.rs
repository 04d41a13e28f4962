//! Cutting secrets out of untrusted text: whole secrets, short secrets standing as a token, and
//! partial echoes.
//!
//! Every match is found in the original text and the union of the matched bytes is cut, each
//! maximal run of cut characters becoming one `[redacted]`. No secret's match depends on
//! another being cut first, so a secret nested in another (driver data that contains the
//! remote id) is cut whole, as a longest-first pass would — whatever the order of the secrets.
//!
//! The rules, by the secret's length in bytes:
//! - empty: never searched;
//! - under [`MIN_REDACTABLE`] (a numeric remote id "42"): cut where it stands as a whole token,
//!   i.e. not touching an alphanumeric character on either side — "task 42 done" loses it,
//!   "1420" and "banana" (for "a") do not;
//! - from [`MIN_REDACTABLE`]: cut wherever it occurs;
//! - from [`FRAGMENT`]: moreover any token-like [`FRAGMENT`]-byte piece of it is cut wherever it
//!   occurs, so a truncated or partial echo is cut too (the union of the pieces covers any
//!   longer fragment). A piece is token-like unless it is [`word_like`]: made only of lowercase
//!   ASCII letters, spaces and ASCII punctuation. Word-like pieces are the structure of driver
//!   data (`{"protocol":"extension"}`), not its secret material; cutting them would cut words
//!   such as "protocol" out of every result. A secret with no token-like piece is cut whole
//!   only.
//!
//! Over-redaction is the accepted cost: a text sharing a token-like [`FRAGMENT`]-byte piece with
//! a secret loses it even where it was innocent.
//!
//! Cost, for a text of n bytes and secrets of m bytes in all: the pieces take
//! O((n + m) · [`FRAGMENT`] · log m) — one ordered-set insert per secret byte and one lookup
//! per text byte, each comparison reading at most [`FRAGMENT`] bytes; the whole-secret searches
//! take O(n + m) (`str::find`) plus O(|secret|) per overlapping occurrence, so O(n · m) only for
//! a text of overlapping repeats of a periodic secret; memory is one flag per text byte.
//! Secrets are bounded by [`crate::policy`] ([`crate::policy::MAX_ID`] and
//! [`crate::policy::MAX_DRIVER_DATA`] characters, so a few thousand pieces at most); texts by
//! the drivers' response limits.

use crate::mutation::{self, planted, Mutant};
use std::collections::BTreeSet;

/// Secrets shorter than this (in bytes) are cut only where they stand as a whole token: a
/// one-letter id cut everywhere would shred every text.
pub const MIN_REDACTABLE: usize = 6;

/// Any piece of a secret this long (in bytes) is cut wherever it occurs: long enough that an
/// innocent text rarely shares it with a random token, short enough to catch an echo cut to a
/// few characters of a token.
pub const FRAGMENT: usize = 8;

/// What replaces each maximal run of cut characters.
pub const PLACEHOLDER: &str = "[redacted]";

/// `text` with every match of `secrets` (by the module's rules) replaced by [`PLACEHOLDER`].
pub fn redact(text: &str, secrets: &[&str]) -> String {
    let mut cut = vec![false; text.len()];
    let mut pieces: BTreeSet<&[u8]> = BTreeSet::new();
    for secret in secrets.iter().filter(|s| !s.is_empty()) {
        let short = secret.len() < MIN_REDACTABLE;
        for at in occurrences(text, secret) {
            if !short || stands_alone(text, at, secret.len()) {
                cut[at..at + secret.len()].fill(true);
            }
        }
        if secret.len() >= FRAGMENT {
            pieces.extend(
                secret
                    .as_bytes()
                    .windows(FRAGMENT)
                    .filter(|p| !word_like(p)),
            );
        }
    }
    if !pieces.is_empty() {
        for (at, window) in text.as_bytes().windows(FRAGMENT).enumerate() {
            if pieces.contains(window) {
                cut[at..at + FRAGMENT].fill(true);
            }
        }
    }
    assemble(text, &cut)
}

/// Whether `piece` is made only of lowercase ASCII letters, spaces and ASCII punctuation: the
/// shape of words and of a format's structure, not of a token (which has a digit, a capital or
/// a non-ASCII byte).
pub fn word_like(piece: &[u8]) -> bool {
    piece
        .iter()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_punctuation() || *b == b' ')
}

/// Byte offsets of every occurrence of `needle` in `text`, overlapping ones included.
fn occurrences<'a>(text: &'a str, needle: &'a str) -> impl Iterator<Item = usize> + 'a {
    let mut from = 0;
    std::iter::from_fn(move || {
        let at = from + text.get(from..)?.find(needle)?;
        from = at + text[at..].chars().next().map_or(1, char::len_utf8);
        Some(at)
    })
}

/// Whether the `len` bytes at `at` touch no alphanumeric character on either side.
fn stands_alone(text: &str, at: usize, len: usize) -> bool {
    let before = text[..at].chars().next_back();
    let after = text[at + len..].chars().next();
    let alone =
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric);
    mutation::substitute(Mutant::ShortSecretNeedsSpaces, alone, |a| {
        planted::alone_between_spaces(a, before, after)
    })
}

/// `text` with each maximal run of characters having a cut byte replaced by [`PLACEHOLDER`].
fn assemble(text: &str, cut: &[bool]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_cut = false;
    for (at, c) in text.char_indices() {
        if cut[at..at + c.len_utf8()].contains(&true) {
            if !in_cut {
                out.push_str(PLACEHOLDER);
            }
            in_cut = true;
        } else {
            out.push(c);
            in_cut = false;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_secrets_are_cut_whole_in_either_order() {
        let remote = "rem-7-abcdef";
        let data = format!("sess-TOKEN-0042/{remote}");
        let text = format!("handle {remote} data {data}!");
        let want = "handle [redacted] data [redacted]!";
        assert_eq!(redact(&text, &[remote, &data]), want);
        assert_eq!(redact(&text, &[&data, remote]), want);
    }

    #[test]
    fn a_short_secret_is_cut_only_as_a_whole_token() {
        assert_eq!(redact("task 42 done", &["42"]), "task [redacted] done");
        assert_eq!(redact("42", &["42"]), "[redacted]");
        assert_eq!(redact("(42)/42.", &["42"]), "([redacted])/[redacted].");
        assert_eq!(redact("1420 and 4242", &["42"]), "1420 and 4242");
        assert_eq!(redact("banana", &["a"]), "banana");
        assert_eq!(redact("é42é", &["42"]), "é42é");
    }

    #[test]
    fn a_partial_echo_of_a_long_secret_is_cut() {
        let token = "tok-9f8e7d6c5b4a3210";
        assert_eq!(
            redact("session tok-9f8e7d6c… expired", &[token]),
            "session [redacted]… expired"
        );
        assert_eq!(redact("tail 6c5b4a3210", &[token]), "tail [redacted]");
        // Shorter than a fragment: left alone.
        assert_eq!(redact("tok-9f8", &[token]), "tok-9f8");
    }

    #[test]
    fn word_like_pieces_of_driver_data_are_not_cut_alone() {
        let data = r#"{"protocol":"legacy","session":"Sx81-44aZ"}"#;
        assert_eq!(
            redact("the protocol is legacy; session: open", &[data]),
            "the protocol is legacy; session: open"
        );
        assert_eq!(
            redact(r#"kept {"protocol":"legacy","session":"Sx81…"#, &[data]),
            r#"kept {"protocol":"legacy","ses[redacted]…"#
        );
        let words = r#"{"protocol":"extension"}"#;
        assert_eq!(redact("protocol extension", &[words]), "protocol extension");
        assert_eq!(redact(&format!("<{words}>"), &[words]), "<[redacted]>");
    }

    #[test]
    fn a_mid_length_secret_is_cut_anywhere_and_only_whole() {
        assert_eq!(redact("xxabc123yy", &["abc123"]), "xx[redacted]yy");
        assert_eq!(redact("abc12", &["abc123"]), "abc12");
    }

    #[test]
    fn multi_byte_text_is_cut_on_character_boundaries() {
        let secret = "ünïcödé-sêcret";
        let text = format!("«{secret}» and ünïc");
        assert_eq!(redact(&text, &[secret]), "«[redacted]» and ünïc");
        assert_eq!(redact("", &[secret, "", "a"]), "");
    }
}
