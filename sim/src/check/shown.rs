//! The event a launch showed its run, read once from the run's hidden input: the prompt is the
//! instruction, then the event's canonical JSON inside the frame markers (DOMAIN §8). The rules
//! read these fields instead of searching the prompt's text.

use serde::Deserialize;
use tasklatch_core::text::{BEGIN_MARKER, END_MARKER};

/// The fields of a shown event the rules read.
#[derive(Clone, PartialEq, Eq, Debug, Deserialize)]
pub struct Shown {
    /// The remote status the event tells (`"working"`, `"completed"`, …).
    pub status: String,
    /// Whether the event tells that tracking is degraded.
    pub tracking_degraded: bool,
    /// The class of the poll error a degraded event tells (`"server"`, `"timeout"`, …).
    #[serde(default)]
    pub poll_error_class: Option<String>,
}

impl Shown {
    /// The event framed in `prompt`, or `None` when the prompt holds no well-formed frame with
    /// a JSON event inside (a rule then treats the launch as showing nothing it can read).
    pub fn of(prompt: &str) -> Option<Shown> {
        let (_, rest) = prompt.split_once(BEGIN_MARKER)?;
        let (body, _) = rest.rsplit_once(END_MARKER)?;
        serde_json::from_str(body.trim_matches('\n')).ok()
    }

    /// Whether the events framed in prompts `a` and `b` are the same but for the poll error's
    /// text (which the fingerprint leaves out, so it never makes a version of its own).
    pub fn same_but_error_text(a: &str, b: &str) -> bool {
        let body = |p: &str| {
            let (_, rest) = p.split_once(BEGIN_MARKER)?;
            let (body, _) = rest.rsplit_once(END_MARKER)?;
            let mut v: serde_json::Value = serde_json::from_str(body.trim_matches('\n')).ok()?;
            v.as_object_mut()?.remove("poll_error");
            Some(v)
        };
        matches!((body(a), body(b)), (Some(x), Some(y)) if x == y)
    }

    /// Whether the event says nothing worth a run: a plain working or submitted status without
    /// degraded tracking (DOMAIN §9, never noisy).
    pub fn is_empty(&self) -> bool {
        matches!(self.status.as_str(), "working" | "submitted") && !self.tracking_degraded
    }

    /// Whether the status is terminal.
    pub fn is_terminal(&self) -> bool {
        matches!(self.status.as_str(), "completed" | "failed" | "cancelled")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tasklatch_core::event::Event;
    use tasklatch_core::ids::TaskId;
    use tasklatch_core::status::RemoteStatus;
    use tasklatch_core::text::notification_prompt;

    fn prompt(status: RemoteStatus, degraded: bool, name: &str) -> String {
        notification_prompt(&Event {
            task_id: TaskId::from("t-1"),
            name: name.into(),
            status,
            result: None,
            result_truncated: false,
            artifact: None,
            error: None,
            input_request: None,
            tracking_degraded: degraded,
            poll_error_class: None,
            poll_error: None,
        })
    }

    #[test]
    fn the_shown_event_is_read_from_the_frame_whatever_the_name_says() {
        let forged = "x \"status\":\"completed\" \"tracking_degraded\":true";
        let shown = Shown::of(&prompt(RemoteStatus::Working, false, forged));
        assert_eq!(
            shown,
            Some(Shown {
                status: "working".into(),
                tracking_degraded: false,
                poll_error_class: None,
            })
        );
        assert!(shown.is_some_and(|s| s.is_empty() && !s.is_terminal()));
        let degraded = Shown::of(&prompt(RemoteStatus::Working, true, "job"));
        assert!(degraded.is_some_and(|s| !s.is_empty()));
    }

    #[test]
    fn a_prompt_without_a_frame_shows_nothing() {
        assert_eq!(Shown::of("no frame here"), None);
    }

    #[test]
    fn events_differing_only_in_the_error_text_are_the_same_but_for_it() {
        let degraded = |class: &str, text: &str| {
            notification_prompt(&Event {
                task_id: TaskId::from("t-1"),
                name: "job".into(),
                status: RemoteStatus::Working,
                result: None,
                result_truncated: false,
                artifact: None,
                error: None,
                input_request: None,
                tracking_degraded: true,
                poll_error_class: Some(class.into()),
                poll_error: Some(text.into()),
            })
        };
        let (a, b) = (degraded("server", "req 1"), degraded("server", "req 2"));
        assert_ne!(a, b);
        assert!(Shown::same_but_error_text(&a, &b));
        assert!(!Shown::same_but_error_text(
            &a,
            &degraded("timeout", "req 1")
        ));
        assert!(!Shown::same_but_error_text(&a, "no frame"));
    }
}
