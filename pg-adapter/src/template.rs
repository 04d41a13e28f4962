//! Statement texts composed at compile time, so SQL that several statements share is written
//! once, in one named file: a statement file holds a hole (`{task_columns}`, `{loop}`, …) that
//! [`filled!`] replaces with another file's text or a word. The result is a `&'static str`
//! constant like an `include_str!`: nothing is composed at run time, and a hole that is missing
//! from its template (a renamed file, a typo) fails the build.

/// `$template` with every `$hole` replaced by `$fill` without its trailing whitespace (a file's
/// last newline), as a `&'static str` constant evaluated at compile time. The build fails if
/// `$hole` is empty or does not occur in `$template`.
macro_rules! filled {
    ($template:expr, $hole:expr, $fill:expr) => {{
        const TEXT: &str = $template;
        const FILL: &str = $fill.trim_ascii_end();
        const LEN: usize = $crate::template::filled_len(TEXT, $hole, FILL);
        const BYTES: [u8; LEN] = $crate::template::fill::<LEN>(TEXT, $hole, FILL);
        $crate::template::text(&BYTES)
    }};
}
pub(crate) use filled;

/// Whether `word` occurs in `text` at byte `at`.
const fn occurs_at(text: &[u8], at: usize, word: &[u8]) -> bool {
    if at + word.len() > text.len() {
        return false;
    }
    let mut i = 0;
    while i < word.len() {
        if text[at + i] != word[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// How often a non-empty `hole` occurs in `text`, counting non-overlapping occurrences from the
/// start.
const fn occurrences(text: &[u8], hole: &[u8]) -> usize {
    let (mut at, mut found) = (0, 0);
    while at < text.len() {
        if occurs_at(text, at, hole) {
            found += 1;
            at += hole.len();
        } else {
            at += 1;
        }
    }
    found
}

/// The length of `template` once every `hole` is `fill`. Panics (at compile time, in
/// [`filled!`]) if `hole` is empty or absent.
pub(crate) const fn filled_len(template: &str, hole: &str, fill: &str) -> usize {
    assert!(!hole.is_empty(), "a template hole cannot be empty");
    let holes = occurrences(template.as_bytes(), hole.as_bytes());
    assert!(holes > 0, "the template does not hold its hole");
    template.len() - holes * hole.len() + holes * fill.len()
}

/// The bytes of `template` with every `hole` replaced by `fill`; `N` must be
/// [`filled_len`]`(template, hole, fill)`.
pub(crate) const fn fill<const N: usize>(template: &str, hole: &str, fill: &str) -> [u8; N] {
    let (text, hole, fill) = (template.as_bytes(), hole.as_bytes(), fill.as_bytes());
    let mut out = [0u8; N];
    let (mut at, mut len) = (0, 0);
    while at < text.len() {
        if occurs_at(text, at, hole) {
            let mut i = 0;
            while i < fill.len() {
                out[len + i] = fill[i];
                i += 1;
            }
            len += fill.len();
            at += hole.len();
        } else {
            out[len] = text[at];
            len += 1;
            at += 1;
        }
    }
    assert!(len == N, "the filled length was miscounted");
    out
}

/// The composed bytes as text: they are UTF-8, since whole `&str`s only ever replace whole
/// occurrences of another `&str` (checked at compile time all the same).
pub(crate) const fn text(bytes: &[u8]) -> &str {
    match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(_) => panic!("a composed statement is not UTF-8"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_hole_is_filled_and_the_rest_kept() {
        const COMPOSED: &str = filled!("a {x} b {x}\n{x}", "{x}", "yz\n");
        assert_eq!(COMPOSED, "a yz b yz\nyz");
        const WORD: &str = filled!("{x}{x}", "{x}", "");
        assert_eq!(WORD, "");
    }
}
