//! Test helpers shared by the text module's tests: an independent live-tag checker and rows.

use crate::identity::Identity;
use crate::ids::TaskId;
use crate::remote::RemoteState;
use crate::secret::{RemoteHandle, Secret};
use crate::status::RemoteStatus;
use crate::task::{AnswerState, CancelState, Outbox, PollState, TaskRow};
use crate::time::Timestamp;

/// The denylist as DOMAIN §8 and the brief spell it, kept apart from the implementation's on
/// purpose: dropping a name from the implementation makes a test fail.
pub const TEST_DENIED_TAGS: &[&str] = &[
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
    "sys",
    "human",
    "important",
    "start_of_turn",
    "end_of_turn",
    "tool_calls",
    "im_start",
    "im_end",
];

/// A remote task id planted in test rows; must never show up in any output.
pub const PLANTED_REMOTE_ID: &str = "RT-PLANTED-SECRET-41";
/// A driver token planted in test rows; must never show up in any output.
pub const PLANTED_DRIVER_TOKEN: &str = "DRV-PLANTED-SECRET-77";

/// Whether `s` holds a live denied tag: a tag opener (`<`, `＜`, `﹤`), then any whitespace,
/// `/` or zero-width characters, then a denied name (zero-width characters inside it ignored,
/// full-width letters read as ASCII), ASCII case-insensitively — or a chat-template token
/// (`<|`). Written without the implementation's helpers so it can catch their mistakes.
pub fn has_live_tag(s: &str) -> bool {
    let chars: Vec<char> = s.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        if !matches!(c, '<' | '\u{FF1C}' | '\u{FE64}') {
            continue;
        }
        let mut j = i + 1;
        while j < chars.len()
            && (chars[j].is_whitespace()
                || chars[j] == '/'
                || matches!(chars[j], '\u{00AD}' | '\u{200B}'..='\u{200F}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}'))
        {
            j += 1;
        }
        let rest: String = chars[j..]
            .iter()
            .filter(|c| !matches!(c, '\u{00AD}' | '\u{200B}'..='\u{200F}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}'))
            .map(|&c| {
                if ('\u{FF01}'..='\u{FF5E}').contains(&c) {
                    char::from_u32(c as u32 - 0xFEE0).unwrap_or(c)
                } else {
                    c
                }
            })
            .collect::<String>()
            .to_ascii_lowercase();
        if rest.starts_with('|') || TEST_DENIED_TAGS.iter().any(|name| rest.starts_with(name)) {
            return true;
        }
    }
    false
}

/// A task row with the planted secrets in its handle, updated at `updated` microseconds.
pub fn row(task_id: &str, name: &str, status: RemoteStatus, updated: i64) -> TaskRow {
    let created = Timestamp::from_micros(1_000);
    let remote = RemoteState {
        status,
        updated_at: Timestamp::from_micros(updated),
        ..RemoteState::submitted(created)
    };
    TaskRow {
        identity: Identity {
            task_id: TaskId::from(task_id),
            owner: "alice".into(),
            thread: "thread-1".into(),
            server: "server-1".into(),
            name: name.to_owned(),
            handle: RemoteHandle {
                remote_task_id: Secret::new(PLANTED_REMOTE_ID),
                driver_data: Secret::new(format!("{{\"token\":\"{PLANTED_DRIVER_TOKEN}\"}}")),
            },
            created_at: created,
        },
        remote,
        poll: PollState {
            next_poll_at: None,
            consecutive_errors: 0,
            last_error: None,
            lease: None,
            claims: 0,
        },
        outbox: Outbox::empty(created),
        cancel: CancelState::none(),
        answer: AnswerState::none(),
    }
}
