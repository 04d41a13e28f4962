//! How the injection judge reads text: as a model would see it, with tables of its own.
//!
//! Written apart from the engine's `core/src/text/fold.rs` on purpose (no shared code, no
//! shared Unicode crate): a character class the engine forgets is still read here, so the
//! judge sees what the engine misses. It is stricter than the engine's reading wherever the
//! two differ: more invisible ranges, more look-alikes, letter-like symbols read as letters.
//!
//! Each character is read on its own:
//! - **dropped** when it shows nothing ([`shows_nothing`]): format and bidi controls, combining
//!   marks, variation selectors, blank fillers, tag characters;
//! - otherwise **read** as the ASCII character it imitates ([`imitated`]) — full-width forms,
//!   mathematical letters, circled and parenthesised letters, Cyrillic and Greek look-alikes,
//!   look-alike `<`, `[` and `|` — and lower-cased.

/// One character of the judge's reading: what it reads as, and whether invisible text was
/// dropped right before it (which separates words for a reader).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) struct Read {
    /// The character as read (lower case).
    pub c: char,
    /// Whether a dropped character stood right before it.
    pub after_dropped: bool,
}

/// `text` as a model would see it (see the module docs). Total; at most one read character
/// per input character.
pub(super) fn read(text: &str) -> Vec<Read> {
    let mut out = Vec::with_capacity(text.len());
    let mut dropped = false;
    for c in text.chars() {
        if shows_nothing(c) {
            dropped = true;
            continue;
        }
        let seen = imitated(c);
        out.push(Read {
            c: seen.to_lowercase().next().unwrap_or(seen),
            after_dropped: dropped,
        });
        dropped = false;
    }
    out
}

/// Characters that render as nothing (or as a blank no wider than nothing).
fn shows_nothing(c: char) -> bool {
    matches!(c as u32,
        0x00AD | 0x034F | 0x061C | 0x115F | 0x1160 | 0x17B4 | 0x17B5 | 0x180B..=0x180F
        | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x206F | 0x2800 | 0x3164
        | 0xFE00..=0xFE0F | 0xFEFF | 0xFFA0 | 0xFFF0..=0xFFFB | 0x1D173..=0x1D17A
        | 0xE0000..=0xE0FFF
        // Combining marks: diacritics, their extensions and supplements, for symbols, halves.
        | 0x0300..=0x036F | 0x0483..=0x0489 | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF
        | 0x20D0..=0x20FF | 0xFE20..=0xFE2F)
}

/// The ASCII character `c` imitates, or `c` itself.
fn imitated(c: char) -> char {
    let code = c as u32;
    let letter = |index: u32| char::from_u32('a' as u32 + index).unwrap_or(c);
    match code {
        0xFF01..=0xFF5E => char::from_u32(code - 0xFEE0).unwrap_or(c),
        0x3000 | 0x2000..=0x200A | 0x205F | 0x00A0 => ' ',
        // Mathematical alphanumeric letters: 13 styles of 52 letters (A–Z, a–z) each.
        0x1D400..=0x1D6A3 => letter((code - 0x1D400) % 52 % 26),
        0x24B6..=0x24CF => letter(code - 0x24B6),
        0x24D0..=0x24E9 => letter(code - 0x24D0),
        0x249C..=0x24B5 => letter(code - 0x249C),
        0x1F130..=0x1F149 => letter(code - 0x1F130),
        0x1F170..=0x1F189 => letter(code - 0x1F170),
        _ => look_alike(c),
    }
}

/// Look-alikes of `<`, `[`, `|` and of Latin letters, or `c` itself.
fn look_alike(c: char) -> char {
    match c {
        '\u{FE64}' | '\u{02C2}' | '\u{02F1}' | '\u{2039}' | '\u{00AB}' | '\u{2329}'
        | '\u{3008}' | '\u{300A}' | '\u{27E8}' | '\u{27EA}' | '\u{276C}' | '\u{276E}'
        | '\u{29FC}' | '\u{1438}' | '\u{226E}' | '\u{2264}' | '\u{FE3F}' => '<',
        '\u{FE5D}' | '\u{2045}' | '\u{27E6}' | '\u{3010}' | '\u{3014}' | '\u{3016}'
        | '\u{3018}' | '\u{301A}' | '\u{298B}' | '\u{FE47}' => '[',
        '\u{01C0}' | '\u{2223}' | '\u{2502}' | '\u{23D0}' | '\u{05C0}' | '\u{2758}'
        | '\u{FFE8}' | '\u{4E28}' => '|',
        'а' | 'А' | 'α' | 'Α' | 'ɑ' => 'a',
        'В' | 'Β' | 'Ь' => 'b',
        'с' | 'С' | 'ϲ' | 'Ϲ' => 'c',
        'ԁ' | 'ɗ' => 'd',
        'е' | 'Е' | 'ε' | 'Ε' | 'ё' => 'e',
        'ɡ' | 'ց' => 'g',
        'һ' | 'Н' | 'Η' => 'h',
        'і' | 'І' | 'ι' | 'Ι' | 'ı' | 'ӏ' => 'i',
        'ј' | 'Ј' | 'ϳ' => 'j',
        'К' | 'κ' | 'Κ' | 'к' => 'k',
        'М' | 'Μ' | 'м' => 'm',
        'ո' | 'Ν' | 'п' => 'n',
        'о' | 'О' | 'ο' | 'Ο' | 'օ' => 'o',
        'р' | 'Р' | 'ρ' | 'Ρ' => 'p',
        'ԛ' => 'q',
        'г' => 'r',
        'ѕ' | 'Ѕ' => 's',
        'Т' | 'τ' | 'Τ' | 'т' => 't',
        'υ' | 'ս' | 'ц' => 'u',
        'ν' | 'ѵ' => 'v',
        'ԝ' | 'ѡ' => 'w',
        'х' | 'Х' | 'χ' | 'Χ' => 'x',
        'у' | 'У' | 'Υ' | 'γ' => 'y',
        'Ζ' => 'z',
        _ => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(text: &str) -> String {
        read(text).iter().map(|r| r.c).collect()
    }

    #[test]
    fn disguises_are_read_as_what_they_imitate() {
        assert_eq!(shown("\u{FF25}\u{FF2E}\u{FF24}"), "end");
        assert_eq!(
            shown("\u{02C2}\u{1D42C}\u{24E8}ѕ\u{3164}t\u{0301}em"),
            "<system"
        );
        assert_eq!(shown("\u{27E6}INST]"), "[inst]");
        assert_eq!(shown("<\u{2066}\u{01C0}im"), "<|im");
        assert_eq!(shown("\u{1D5B2}\u{1D400}"), "sa");
    }

    #[test]
    fn dropped_characters_separate_what_follows() {
        let r = read("a\u{200B}b c");
        assert_eq!(
            r.iter().map(|r| r.after_dropped).collect::<Vec<_>>(),
            [false, true, false, false]
        );
    }
}
