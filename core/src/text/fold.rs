//! Folding untrusted text into the form a model reads it in, before it is matched against
//! denied tags and boundary markers (DOMAIN §8).
//!
//! A model does not see code points, it sees what they look like. Each character is folded on
//! its own, in this order:
//!
//! 1. its Unicode compatibility decomposition (NFKD: full-width `Ｅ`, small-form `﹤`,
//!    mathematical `𝐬`, circled `ⓢ` become their plain letters);
//! 2. characters that show nothing are dropped: format characters (general category `Cf`:
//!    zero-width spaces and joiners, bidi embeddings and isolates U+2066..U+2069, the soft
//!    hyphen, tag characters), combining marks (`Mn`, `Mc`, `Me`) and the blank fillers in
//!    [`is_filler`] (the Hangul fillers U+115F, U+1160, U+3164, U+FFA0, the braille blank…);
//! 3. look-alikes of `<`, `[` and `|` ([`look_alike`]) and of a few Latin letters
//!    ([`homoglyph`]) are read as the ASCII character they imitate;
//! 4. ASCII letters are lower-cased.
//!
//! The fold is only a reading aid: matching happens on the folded characters, and every folded
//! character remembers the byte range of the original character it came from, so a match
//! replaces original text.

use crate::mutation::{self, planted, Mutant};
use std::ops::Range;
use unicode_general_category::{get_general_category, GeneralCategory};
use unicode_normalization::char::decompose_compatible;

/// Text as a model reads it: the folded characters, each with the byte range of the original
/// character it came from (ranges never overlap and grow along the sequence).
pub(super) struct Folded {
    /// The folded characters.
    pub chars: Vec<char>,
    /// `from[i]` is the byte range, in the original text, of the character `chars[i]` came from.
    pub from: Vec<Range<usize>>,
}

impl Folded {
    /// Whether original text was dropped between folded characters `i - 1` and `i`: an
    /// invisible character there separates them for a reader even though the fold removed it.
    /// Contract: `0 < i < self.chars.len()`; `false` otherwise.
    pub fn gap_before(&self, i: usize) -> bool {
        match (
            i.checked_sub(1).and_then(|p| self.from.get(p)),
            self.from.get(i),
        ) {
            (Some(prev), Some(here)) => prev.end < here.start,
            _ => false,
        }
    }
}

/// Folds `text` character by character (see the module docs). Total and deterministic; the
/// result holds at most a few characters per original character (NFKD's longest expansion).
pub(super) fn fold(text: &str) -> Folded {
    let mut chars = Vec::with_capacity(text.len());
    let mut from = Vec::with_capacity(text.len());
    let mut one = Vec::new();
    for (at, c) in text.char_indices() {
        one.clear();
        fold_char(c, &mut one);
        one = mutation::substitute(Mutant::NeutraliserSkipsNormalisation, one, |_| {
            planted::code_point_only(c)
        });
        for &f in &one {
            chars.push(f);
            from.push(at..at + c.len_utf8());
        }
    }
    Folded { chars, from }
}

/// Appends the folding of one character to `out` (nothing when it shows nothing).
fn fold_char(c: char, out: &mut Vec<char>) {
    if c.is_ascii() {
        out.push(c.to_ascii_lowercase());
        return;
    }
    decompose_compatible(c, |d| {
        if !shows_nothing(d) {
            out.push(homoglyph(look_alike(d)).to_ascii_lowercase());
        }
    });
}

/// Format characters, combining marks and blank fillers: characters a reader does not see.
fn shows_nothing(c: char) -> bool {
    is_filler(c)
        || matches!(
            get_general_category(c),
            GeneralCategory::Format
                | GeneralCategory::NonspacingMark
                | GeneralCategory::SpacingMark
                | GeneralCategory::EnclosingMark
        )
}

/// Letters and symbols that render blank without being format characters or whitespace, and
/// the default-ignorable code points that are unassigned (so have no category to go by).
fn is_filler(c: char) -> bool {
    matches!(
        c,
        '\u{115F}'
            | '\u{1160}'
            | '\u{3164}'
            | '\u{FFA0}'
            | '\u{2800}'
            | '\u{2065}'
            | '\u{FFF0}'..='\u{FFF8}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
}

/// A look-alike of a tag opener `<`, a token opener `[` or a template bar `|` read as that
/// character; any other character as itself. (Full-width and small forms are folded to ASCII
/// by the decomposition already.)
fn look_alike(c: char) -> char {
    match c {
        '\u{02C2}' | '\u{02F1}' | '\u{2039}' | '\u{00AB}' | '\u{3008}' | '\u{27E8}'
        | '\u{276C}' | '\u{276E}' | '\u{29FC}' | '\u{1438}' | '\u{226E}' => '<',
        '\u{2045}' | '\u{27E6}' | '\u{3010}' | '\u{3014}' | '\u{3016}' | '\u{301A}' => '[',
        '\u{01C0}' | '\u{2223}' | '\u{2502}' | '\u{23D0}' | '\u{05C0}' => '|',
        _ => c,
    }
}

/// A Cyrillic or Greek letter drawn like a Latin one, read as that Latin letter (lower case);
/// any other character as itself.
fn homoglyph(c: char) -> char {
    match c {
        'а' | 'А' | 'α' | 'Α' => 'a',
        'В' | 'Β' => 'b',
        'с' | 'С' | 'ϲ' => 'c',
        'ԁ' => 'd',
        'е' | 'Е' | 'ε' | 'Ε' => 'e',
        'һ' | 'Н' | 'Η' => 'h',
        'і' | 'І' | 'ι' | 'Ι' => 'i',
        'ј' | 'Ј' => 'j',
        'К' | 'κ' | 'Κ' => 'k',
        'М' | 'Μ' => 'm',
        'ո' | 'Ν' => 'n',
        'о' | 'О' | 'ο' | 'Ο' => 'o',
        'р' | 'Р' | 'ρ' | 'Ρ' => 'p',
        'ѕ' | 'Ѕ' => 's',
        'Т' | 'τ' | 'Τ' => 't',
        'υ' | 'ս' => 'u',
        'ν' => 'v',
        'ԝ' => 'w',
        'х' | 'Х' | 'χ' | 'Χ' => 'x',
        'у' | 'У' | 'Υ' => 'y',
        'Ζ' => 'z',
        _ => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folded(text: &str) -> String {
        fold(text).chars.into_iter().collect()
    }

    #[test]
    fn compatibility_forms_become_plain_lower_case_letters() {
        assert_eq!(folded("\u{FF25}\u{FF2E}\u{FF24}"), "end");
        assert_eq!(folded("\u{FE64}\u{1D42C}ys\u{24E3}em"), "<system");
        assert_eq!(folded("Ｓｙｓ"), "sys");
    }

    #[test]
    fn invisible_characters_and_marks_are_dropped() {
        for text in [
            "s\u{200B}y\u{2066}s\u{2069}t\u{00AD}e\u{FEFF}m",
            "s\u{3164}y\u{115F}s\u{1160}t\u{FFA0}em",
            "s\u{0301}y\u{20DD}st\u{E0041}em",
        ] {
            assert_eq!(folded(text), "system", "{text:?}");
        }
    }

    #[test]
    fn look_alikes_are_read_as_what_they_imitate() {
        assert_eq!(folded("\u{02C2}\u{2039}\u{27E8}\u{2329}"), "<<<<");
        assert_eq!(folded("\u{27E6}\u{FF3B}"), "[[");
        assert_eq!(
            folded("\u{0455}\u{0443}\u{0455}\u{0442}\u{0435}m"),
            "sys\u{0442}em"
        );
        assert_eq!(folded("ѕуѕТеm"), "system");
    }

    #[test]
    fn every_folded_character_points_at_its_original() {
        let text = "a\u{200B}\u{FB01}<";
        let f = fold(text);
        assert_eq!(f.chars, ['a', 'f', 'i', '<']);
        assert_eq!(f.from, [0..1, 4..7, 4..7, 7..8]);
        assert!(f.gap_before(1) && !f.gap_before(2) && !f.gap_before(3));
        assert!(!f.gap_before(0) && !f.gap_before(9));
    }
}
