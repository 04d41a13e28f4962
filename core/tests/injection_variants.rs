//! Property: no disguised spelling of a denied tag, a denied bracketed token or a boundary
//! marker survives `neutralise` or the notification prompt (issue 22 item 6). The variants are
//! generated: look-alike openers, full-width, mathematical, circled, Cyrillic and accented
//! letters, invisible characters (zero-width, bidi controls, Hangul fillers, variation
//! selectors, tag characters) between any two characters, and words split by newlines.

use proptest::prelude::*;
use tasklatch_core::event::Event;
use tasklatch_core::status::RemoteStatus;
use tasklatch_core::text::{
    count_markers, neutralise, notification_prompt, DENIED_TAGS, DENIED_TOKENS,
};

/// Characters that show nothing, slipped between the characters of a variant.
const INVISIBLE: &[&str] = &[
    "\u{200B}",
    "\u{200C}",
    "\u{200D}",
    "\u{2060}",
    "\u{FEFF}",
    "\u{00AD}",
    "\u{2066}",
    "\u{2067}",
    "\u{2068}",
    "\u{2069}",
    "\u{202A}",
    "\u{202E}",
    "\u{3164}",
    "\u{115F}",
    "\u{1160}",
    "\u{FFA0}",
    "\u{034F}",
    "\u{FE0F}",
    "\u{E0020}",
    "\u{061C}",
];

/// Spellings of the tag opener `<`.
const ANGLE: &[&str] = &[
    "<", "\u{FF1C}", "\u{FE64}", "\u{02C2}", "\u{2039}", "\u{2329}", "\u{27E8}", "\u{276E}",
    "\u{226E}",
];

/// Spellings of the token opener `[`.
const BRACKET: &[&str] = &["[", "\u{FF3B}", "\u{27E6}", "\u{3010}"];

/// What may stand between an opener and its name.
const OPENER_GAP: &[&str] = &[" ", "\t", "\n", "/", "\u{3000}", "\u{200B}", "\u{2066}"];

/// What may stand between the words of a marker.
const WORD_GAP: &[&str] = &[
    "", " ", "\n", "\r\n", "\t", "_", "-", ".", "\u{3000}", "\u{3164}", "\u{200B}",
];

/// The text kept in front of every variant; it has nothing to neutralise.
const LEAD: &str = "note: ";

/// A Cyrillic letter drawn like `c`, if there is one in the test's table.
fn cyrillic(c: char) -> Option<char> {
    let pairs = [
        ('a', 'а'),
        ('c', 'с'),
        ('e', 'е'),
        ('i', 'і'),
        ('o', 'о'),
        ('p', 'р'),
        ('s', 'ѕ'),
        ('x', 'х'),
        ('y', 'у'),
    ];
    pairs.iter().find(|(l, _)| *l == c).map(|(_, k)| *k)
}

/// One ASCII character `c` of a name, disguised in style `style` (0..8) and followed by
/// `invisible` when given.
fn disguise_char(c: char, style: u8, invisible: Option<&str>) -> String {
    let offset = |base: u32| char::from_u32(base + (c.to_ascii_lowercase() as u32 - 'a' as u32));
    let letter = c.is_ascii_alphabetic();
    let shown = match style {
        1 if letter => c.to_ascii_uppercase().to_string(),
        2 => char::from_u32(c as u32 + 0xFEE0).map_or(c.to_string(), String::from),
        3 if letter => offset(0x1D41A).map_or(c.to_string(), String::from),
        4 if letter => offset(0x24D0).map_or(c.to_string(), String::from),
        5 if letter => format!("{c}\u{0301}"),
        6 => cyrillic(c).map_or(c.to_string(), String::from),
        7 if letter => offset(0xFF21).map_or(c.to_string(), String::from),
        _ => c.to_string(),
    };
    format!("{shown}{}", invisible.unwrap_or(""))
}

/// A disguised spelling of `word`, one style and optional invisible character per character.
fn disguised(word: &'static str) -> impl Strategy<Value = String> {
    let n = word.chars().count();
    (
        prop::collection::vec(0u8..8, n),
        prop::collection::vec(
            prop::option::weighted(0.3, prop::sample::select(INVISIBLE)),
            n,
        ),
    )
        .prop_map(move |(styles, gaps)| {
            word.chars()
                .zip(styles)
                .zip(gaps)
                .map(|((c, s), g)| disguise_char(c, s, g))
                .collect()
        })
}

/// A run of up to `max` pieces drawn from `pieces`.
fn gap(pieces: &'static [&'static str], max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(pieces), 0..=max).prop_map(|p| p.concat())
}

/// A denied tag in disguise: an opener, a gap, the name, `>`.
fn tag_variant() -> impl Strategy<Value = String> {
    prop::sample::select(DENIED_TAGS)
        .prop_flat_map(|name| {
            (
                prop::sample::select(ANGLE),
                gap(OPENER_GAP, 2),
                disguised(name),
            )
        })
        .prop_map(|(open, gap, name)| format!("{open}{gap}{name}>"))
}

/// A denied bracketed token in disguise: an opener, a gap, the token, `]`.
fn token_variant() -> impl Strategy<Value = String> {
    prop::sample::select(DENIED_TOKENS)
        .prop_flat_map(|name| {
            (
                prop::sample::select(BRACKET),
                gap(OPENER_GAP, 2),
                disguised(name),
            )
        })
        .prop_map(|(open, gap, name)| format!("{open}{gap}{name}]"))
}

/// A boundary marker phrase in disguise, and whether it is a BEGIN phrase.
fn marker_variant() -> impl Strategy<Value = (String, bool)> {
    prop::bool::ANY
        .prop_flat_map(|begin| {
            let kind = if begin { "begin" } else { "end" };
            (
                Just(begin),
                disguised(kind),
                gap(WORD_GAP, 2),
                disguised("user"),
                gap(WORD_GAP, 2),
                disguised("input"),
            )
        })
        .prop_map(|(begin, k, g1, u, g2, i)| (format!("{k}{g1}{u}{g2}{i}"), begin))
}

fn event_with(text: &str) -> Event {
    Event {
        task_id: "tsk_1".into(),
        name: "job".into(),
        status: RemoteStatus::Failed,
        result: None,
        result_truncated: false,
        artifact: None,
        error: Some(text.into()),
        input_request: None,
        tracking_degraded: false,
        poll_error_class: None,
        poll_error: None,
    }
}

/// The prompt of an event whose error is `text` holds one frame and `text` neutralised.
fn assert_prompt_defuses(text: &str) -> Result<(), TestCaseError> {
    let prompt = notification_prompt(&event_with(text));
    prop_assert_eq!(count_markers(&prompt), (1, 1), "{:?}: {}", text, prompt);
    let encoded = serde_json::to_string(&neutralise(text)).unwrap_or_default();
    prop_assert!(prompt.contains(&encoded), "{:?}: {}", text, prompt);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1_000))]

    #[test]
    fn no_disguised_tag_survives(variant in tag_variant()) {
        let input = format!("{LEAD}{variant} tail");
        let out = neutralise(&input);
        prop_assert!(out.starts_with(&format!("{LEAD}&lt;")), "{:?} -> {:?}", input, out);
        prop_assert_eq!(neutralise(&out), out.clone());
        assert_prompt_defuses(&input)?;
    }

    #[test]
    fn no_disguised_token_survives(variant in token_variant()) {
        let input = format!("{LEAD}{variant} tail");
        let out = neutralise(&input);
        prop_assert!(out.starts_with(&format!("{LEAD}&#91;")), "{:?} -> {:?}", input, out);
        prop_assert_eq!(neutralise(&out), out.clone());
        assert_prompt_defuses(&input)?;
    }

    #[test]
    fn no_disguised_marker_survives((variant, begin) in marker_variant()) {
        let input = format!("{LEAD}<<<{variant}>>> tail");
        let out = neutralise(&input);
        let forged = if begin { "[forged-begin-marker]" } else { "[forged-end-marker]" };
        prop_assert!(out.starts_with(&format!("{LEAD}<<<{forged}")), "{:?} -> {:?}", input, out);
        prop_assert_eq!(neutralise(&out), out.clone());
        assert_prompt_defuses(&input)?;
    }
}
