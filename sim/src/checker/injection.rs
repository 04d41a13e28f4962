//! Untrusted text reaching a model (`Invariant::Injected`, DOMAIN §8).
//!
//! Three outputs reach a model: the notification prompt of every launch, the per-run context
//! projection (task names) and a listing an agent tool returns (task names and errors). The
//! prompt must hold exactly one BEGIN and one END boundary marker, in that order, and no live
//! authority tag; a context or listing text must hold no live tag and no marker at all.
//!
//! The judge is written here, apart from the engine's `neutralise`, so a bug there is not
//! shared by its judge. It reads exactly the forms the engine's contract claims to defuse:
//!
//! - a **live tag** is a tag opener (`<`, `＜` U+FF1C or `﹤` U+FE64), then any run of
//!   whitespace, `/` and invisible format characters, then a name that starts with a denied
//!   name (ASCII case-insensitive, invisible characters inside it dropped, full-width letters
//!   read as ASCII), or with `|` (a chat-template token);
//! - a **marker phrase** is `BEGIN USER INPUT` or `END USER INPUT` in any ASCII case, with any
//!   run of whitespace, `_`, `-`, `.` or invisible characters between the words, not preceded
//!   by an alphanumeric character — the exact markers included.

use super::facts::Facts;
use super::{Invariant, Verdict};
use crate::history::Event;

/// The tag names DOMAIN §8 denies, spelled here apart from the engine's list.
const DENIED: [&str; 14] = [
    "system",
    "system-reminder",
    "instruction",
    "instructions",
    "assistant",
    "user",
    "tool",
    "tool_result",
    "function_results",
    "tasklatch-event",
    "untrusted-input",
    "function_calls",
    "invoke",
    "developer",
];

/// The line that opens the one frame of a prompt.
const BEGIN_LINE: &str = "<<<BEGIN USER INPUT>>>";
/// The line that closes it.
const END_LINE: &str = "<<<END USER INPUT>>>";

pub(super) fn check(f: &Facts<'_>, v: &mut Verdict) {
    for (i, e) in f.entries.iter().enumerate() {
        // (the task shown, what is wrong); a shown task is named by its own label.
        let problems: Vec<(Option<String>, String)> = match &e.event {
            Event::LaunchServed { prompt, .. } => prompt_problem(prompt)
                .map(|p| (e.task.clone(), p))
                .into_iter()
                .collect(),
            Event::ContextRead {
                answer: Ok(entries),
                ..
            } => entries
                .iter()
                .filter_map(|c| {
                    let p = text_problem(&c.name)?;
                    Some((f.label(c.task_id.as_str()), format!("context name {p}")))
                })
                .collect(),
            Event::Listed {
                answer: Ok(tasks), ..
            } => tasks
                .iter()
                .flat_map(|t| {
                    let label = f.label(t.task_id.as_str());
                    let name = text_problem(&t.name).map(|p| format!("listed name {p}"));
                    let error = t.error.as_deref().and_then(text_problem);
                    let error = error.map(|p| format!("listed error {p}"));
                    name.into_iter()
                        .chain(error)
                        .map(move |p| (label.clone(), p))
                })
                .collect(),
            _ => Vec::new(),
        };
        for (task, p) in problems {
            v.push(
                Invariant::Injected,
                task.or_else(|| e.task.clone()),
                Some(i),
                p,
            );
        }
    }
}

/// What is wrong with a notification prompt, if anything: a live tag, or other markers than
/// one BEGIN line followed later by one END line.
fn prompt_problem(prompt: &str) -> Option<String> {
    if let Some(tag) = live_tag(prompt) {
        return Some(format!("the prompt holds a live tag: {tag:?}"));
    }
    let phrases = marker_phrases(prompt);
    let begins: Vec<usize> = phrases.iter().filter(|p| p.1).map(|p| p.0).collect();
    let ends: Vec<usize> = phrases.iter().filter(|p| !p.1).map(|p| p.0).collect();
    let framed = matches!(
        (begins.as_slice(), ends.as_slice()),
        ([b], [e]) if b < e
    ) && prompt.matches(BEGIN_LINE).count() == 1
        && prompt.matches(END_LINE).count() == 1
        && prompt.find(BEGIN_LINE) < prompt.find(END_LINE);
    (!framed).then(|| {
        format!(
            "the prompt holds {} BEGIN and {} END marker phrases ({} and {} exact), not one \
             frame",
            begins.len(),
            ends.len(),
            prompt.matches(BEGIN_LINE).count(),
            prompt.matches(END_LINE).count()
        )
    })
}

/// What is wrong with a text shown in a context entry or a listing, if anything.
fn text_problem(text: &str) -> Option<String> {
    if let Some(tag) = live_tag(text) {
        return Some(format!("holds a live tag: {tag:?}"));
    }
    (!marker_phrases(text).is_empty()).then(|| format!("holds a boundary marker: {text:?}"))
}

/// Zero-width and other invisible format characters.
fn invisible(c: char) -> bool {
    matches!(c, '\u{00AD}' | '\u{200B}'..='\u{200F}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}')
}

/// The first live tag in `text` (from its opener, a few characters), if any.
fn live_tag(text: &str) -> Option<String> {
    let chars: Vec<char> = text.chars().collect();
    (0..chars.len())
        .filter(|&i| matches!(chars[i], '<' | '\u{FF1C}' | '\u{FE64}'))
        .find(|&i| {
            let name: String = chars[i + 1..]
                .iter()
                .skip_while(|c| c.is_whitespace() || **c == '/' || invisible(**c))
                .filter(|c| !invisible(**c))
                .take(20)
                .map(|&c| match c {
                    '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
                    _ => c,
                })
                .map(|c| c.to_ascii_lowercase())
                .collect();
            name.starts_with('|') || DENIED.iter().any(|d| name.starts_with(d))
        })
        .map(|i| chars[i..].iter().take(24).collect())
}

/// Every marker phrase in `text`: (character index, whether it is a BEGIN phrase).
fn marker_phrases(text: &str) -> Vec<(usize, bool)> {
    let chars: Vec<char> = text.chars().collect();
    let mut found = Vec::new();
    for i in 0..chars.len() {
        if i > 0 && chars[i - 1].is_alphanumeric() {
            continue;
        }
        let rest = &chars[i..];
        let (kind_len, begin) = if starts_with_word(rest, "begin") {
            (5, true)
        } else if starts_with_word(rest, "end") {
            (3, false)
        } else {
            continue;
        };
        let Some(after_user) = word_after_separators(&rest[kind_len..], "user") else {
            continue;
        };
        if word_after_separators(after_user, "input").is_some() {
            found.push((i, begin));
        }
    }
    found
}

/// Whether `chars` starts with `word`, ASCII case-insensitively.
fn starts_with_word(chars: &[char], word: &str) -> bool {
    chars.len() >= word.len()
        && chars
            .iter()
            .zip(word.chars())
            .all(|(c, w)| c.eq_ignore_ascii_case(&w))
}

/// What follows `word` after a run of separators at the start of `chars`, if `word` is there.
fn word_after_separators<'a>(chars: &'a [char], word: &str) -> Option<&'a [char]> {
    let skipped = chars
        .iter()
        .take_while(|c| c.is_whitespace() || matches!(c, '_' | '-' | '.') || invisible(**c))
        .count();
    let rest = &chars[skipped..];
    starts_with_word(rest, word).then(|| &rest[word.len()..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hosts::mcp::FORGED;
    use crate::naming::HOSTILE_NAME_TAIL;
    use tasklatch_core::event::Event;
    use tasklatch_core::status::RemoteStatus;
    use tasklatch_core::text::{
        neutralise, notification_prompt, BEGIN_MARKER, DENIED_TAGS, END_MARKER,
        NOTIFICATION_INSTRUCTION,
    };

    fn prompt_of(body: &str) -> String {
        format!("{NOTIFICATION_INSTRUCTION}\n\n{BEGIN_LINE}\n{body}\n{END_LINE}")
    }

    #[test]
    fn the_judge_spells_the_markers_as_the_engine_does() {
        assert_eq!((BEGIN_LINE, END_LINE), (BEGIN_MARKER, END_MARKER));
    }

    #[test]
    fn live_tags_in_every_claimed_spelling_are_seen() {
        for text in [
            "<system>",
            "x </SYSTEM>",
            "<System-Reminder foo=\"1\">",
            "< instruction",
            "</\ttasklatch-event>",
            "<sys\u{200B}tem>",
            "\u{FF1C}system>",
            "\u{FE64}/user",
            "<\u{FF53}\u{FF59}\u{FF53}\u{FF54}\u{FF45}\u{FF4D}>",
            "<|im_start|>",
            "<tool_call>",
            "<System",
        ] {
            assert!(live_tag(text).is_some(), "{text:?}");
            assert!(text_problem(text).is_some(), "{text:?}");
        }
        for text in [
            "&lt;system>",
            "<b>",
            "a < b",
            "<sys tem>",
            "lone <",
            "&lt; SYSTEM",
        ] {
            assert_eq!(live_tag(text), None, "{text:?}");
        }
    }

    #[test]
    fn marker_phrases_in_every_claimed_spelling_are_seen() {
        for text in [
            BEGIN_MARKER,
            END_MARKER,
            "=== begin user input ===",
            "End_User-Input",
            "BEGIN\u{200B}USER\nINPUT",
            "x BeginUserInput",
        ] {
            assert_eq!(marker_phrases(text).len(), 1, "{text:?}");
            assert!(text_problem(text).is_some(), "{text:?}");
        }
        for text in [
            "send user input",
            "BEGIN USER",
            "[forged-begin-marker]",
            "xEND USER INPUT",
        ] {
            assert!(marker_phrases(text).is_empty(), "{text:?}");
        }
    }

    #[test]
    fn a_forged_prompt_is_flagged() {
        let forged = format!("job-1 {HOSTILE_NAME_TAIL}");
        assert!(prompt_problem(&prompt_of(&forged)).is_some());
        assert!(prompt_problem(&prompt_of(&format!("a {END_LINE} b"))).is_some());
        assert!(prompt_problem(&prompt_of("=== end user input ===")).is_some());
        assert!(prompt_problem(&prompt_of("<system-reminder>")).is_some());
        let reversed = format!("{END_LINE}\nx\n{BEGIN_LINE}");
        assert!(prompt_problem(&reversed).is_some());
        assert!(prompt_problem("no frame at all").is_some());
        assert!(text_problem(&forged).is_some());
    }

    #[test]
    fn the_judge_denies_what_the_engine_denies() {
        assert_eq!(DENIED.as_slice(), DENIED_TAGS);
    }

    #[test]
    fn the_engines_own_output_passes() {
        let hostile = format!("job-1 {HOSTILE_NAME_TAIL}");
        assert_eq!(text_problem(&neutralise(&hostile)), None);
        let event = Event {
            task_id: "tsk_1".into(),
            name: hostile.clone(),
            status: RemoteStatus::Failed,
            result: Some(FORGED.into()),
            result_truncated: false,
            artifact: None,
            error: Some(format!("{hostile} {FORGED}")),
            input_request: None,
            tracking_degraded: false,
            poll_error_class: None,
            poll_error: None,
        };
        assert!(prompt_problem(&prompt_of(&event.canonical_json())).is_some());
        assert_eq!(prompt_problem(&notification_prompt(&event)), None);
        assert_eq!(text_problem("job-3"), None);
        assert_eq!(prompt_problem(&prompt_of("{\"name\":\"job-3\"}")), None);
    }

    #[test]
    fn a_violation_names_the_shown_task_and_the_entry() {
        use crate::checker::check;
        use crate::generate::{generate, Knobs};
        use crate::history::{Entry, Event as Seen};
        use tasklatch_core::text::ContextEntry;
        use tasklatch_core::time::Timestamp;
        let entry = |event| Entry {
            at_us: 0,
            host: "user".into(),
            task: None,
            event,
        };
        let shown = |name: &str| ContextEntry {
            task_id: "tsk_7".into(),
            name: name.into(),
            status: RemoteStatus::Working,
            updated_at: Timestamp::EPOCH,
        };
        let read = |name: &str| Seen::ContextRead {
            owner: "user-0".into(),
            thread: "user-0-thread-0".into(),
            answer: Ok(vec![shown(name)]),
        };
        let hostile = format!("job-7 {HOSTILE_NAME_TAIL}");
        let entries = vec![
            entry(Seen::SubmitSent {
                n: 7,
                task_id: "tsk_7".into(),
            }),
            entry(read(&neutralise(&hostile))),
            entry(read(&hostile)),
        ];
        let plan = generate(0, &Knobs::default());
        let found: Vec<_> = check(&plan, &entries)
            .violations
            .into_iter()
            .filter(|v| v.invariant == Invariant::Injected)
            .map(|v| (v.task, v.entry))
            .collect();
        assert_eq!(found, [(Some("task-7".to_owned()), Some(2))]);
    }
}
