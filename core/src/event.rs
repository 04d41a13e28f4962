//! Events and fingerprints (DOMAIN §2).
//!
//! An event is a whitelisted snapshot of what is worth saying about a task: no secrets. It exists
//! only for attention statuses or degraded tracking. Its fingerprint is the sha256 of its
//! canonical JSON with the poll error's *text* left out (the class stays in): a different error
//! text alone never makes a new version.

use crate::canonical::to_canonical_json;
use crate::identity::Identity;
use crate::ids::TaskId;
use crate::mutation::{self, Mutant};
use crate::policy::{bounded, MAX_SHOWN_ERROR};
use crate::remote::{PollError, RemoteState};
use crate::status::RemoteStatus;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt;

/// What a notification tells the conversation. Whitelisted fields only.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Event {
    /// Local task id.
    pub task_id: TaskId,
    /// Task name (untrusted).
    pub name: String,
    /// Remote status.
    pub status: RemoteStatus,
    /// Result or bounded preview.
    pub result: Option<String>,
    /// Whether `result` is truncated.
    pub result_truncated: bool,
    /// Artifact reference.
    pub artifact: Option<String>,
    /// Remote error, bounded to the shown limit.
    pub error: Option<String>,
    /// Input request.
    pub input_request: Option<String>,
    /// Polling keeps failing.
    pub tracking_degraded: bool,
    /// Class of the last poll error, while degraded.
    pub poll_error_class: Option<String>,
    /// Text of the last poll error, while degraded (bounded; not part of the fingerprint).
    pub poll_error: Option<String>,
}

/// sha256 of an event's canonical JSON, lower-case hex.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Fingerprint(pub String);

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "fp:{}", &self.0[..self.0.len().min(12)])
    }
}

impl Event {
    /// The event of a task in `remote` state, degraded by `degraded` if given; `None` when
    /// nothing is worth saying (not an attention status and not degraded).
    pub fn build(
        identity: &Identity,
        remote: &RemoteState,
        degraded: Option<&PollError>,
    ) -> Option<Event> {
        if !remote.status.needs_attention() && degraded.is_none() {
            return None;
        }
        Some(Event {
            task_id: identity.task_id.clone(),
            name: identity.name.clone(),
            status: remote.status,
            result: remote.result.clone(),
            result_truncated: remote.result_truncated,
            artifact: remote.artifact.clone(),
            error: remote.error.as_deref().map(|e| bounded(e, MAX_SHOWN_ERROR)),
            input_request: remote.input_request.clone(),
            tracking_degraded: degraded.is_some(),
            poll_error_class: degraded.map(|e| e.class.as_str().to_owned()),
            poll_error: degraded.map(|e| bounded(&e.message, MAX_SHOWN_ERROR)),
        })
    }

    /// Canonical JSON of the whole event (what a notification carries).
    pub fn canonical_json(&self) -> String {
        to_canonical_json(self)
    }

    /// The fingerprint: sha256 of the canonical JSON without the poll error's text.
    pub fn fingerprint(&self) -> Fingerprint {
        let poll_error = mutation::substitute(Mutant::FingerprintCoversErrorText, None, |_| {
            self.poll_error.clone()
        });
        let view = Event {
            poll_error,
            ..self.clone()
        };
        let digest = Sha256::digest(to_canonical_json(&view).as_bytes());
        Fingerprint(hex::encode(digest))
    }

    /// The event made storable, paired with its fingerprint. Storable text has no NUL (which
    /// Postgres text cannot hold; it becomes U+FFFD), so every store keeps exactly the event
    /// the fingerprint was taken of. (Reports are made storable by `snapshot::validate` already;
    /// this holds the pair together for any event, whatever built it.)
    pub fn fingerprinted(self) -> (Event, Fingerprint) {
        let event = self.storable();
        let fp = event.fingerprint();
        (event, fp)
    }

    fn storable(self) -> Event {
        let text = |s: String| {
            if s.contains('\0') {
                s.replace('\0', "\u{FFFD}")
            } else {
                s
            }
        };
        Event {
            task_id: TaskId(text(self.task_id.0)),
            name: text(self.name),
            status: self.status,
            result: self.result.map(text),
            result_truncated: self.result_truncated,
            artifact: self.artifact.map(text),
            error: self.error.map(text),
            input_request: self.input_request.map(text),
            tracking_degraded: self.tracking_degraded,
            poll_error_class: self.poll_error_class.map(text),
            poll_error: self.poll_error.map(text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::ErrorClass;
    use crate::secret::{RemoteHandle, Secret};
    use crate::time::Timestamp;

    fn identity() -> Identity {
        Identity {
            task_id: "tsk_1".into(),
            owner: "alice".into(),
            thread: "th".into(),
            server: "srv".into(),
            name: "build".into(),
            handle: RemoteHandle {
                remote_task_id: Secret::new("REMOTE-SECRET"),
                driver_data: Secret::new("DRIVER-SECRET"),
            },
            created_at: Timestamp::EPOCH,
        }
    }

    fn state(status: RemoteStatus) -> RemoteState {
        RemoteState {
            status,
            ..RemoteState::submitted(Timestamp::EPOCH)
        }
    }

    #[test]
    fn event_exists_only_for_attention_or_degraded() {
        let id = identity();
        assert!(Event::build(&id, &state(RemoteStatus::Working), None).is_none());
        assert!(Event::build(&id, &state(RemoteStatus::Submitted), None).is_none());
        for s in [
            RemoteStatus::InputRequired,
            RemoteStatus::Completed,
            RemoteStatus::Failed,
            RemoteStatus::Cancelled,
        ] {
            assert_eq!(
                Event::build(&id, &state(s), None).map(|e| e.status),
                Some(s)
            );
        }
        let err = PollError {
            class: ErrorClass::Timeout,
            message: "t/o".into(),
        };
        let e = Event::build(&id, &state(RemoteStatus::Working), Some(&err)).unwrap();
        assert!(e.tracking_degraded);
        assert_eq!(e.poll_error_class.as_deref(), Some("timeout"));
    }

    #[test]
    fn event_carries_no_secret() {
        let e = Event::build(&identity(), &state(RemoteStatus::Completed), None).unwrap();
        let json = e.canonical_json();
        assert!(!json.contains("SECRET"), "{json}");
    }

    #[test]
    fn fingerprint_is_sha256_of_canonical_json() {
        let e = Event::build(&identity(), &state(RemoteStatus::Completed), None).unwrap();
        let expected = hex::encode(Sha256::digest(e.canonical_json().as_bytes()));
        assert_eq!(e.fingerprint().0, expected);
        assert_eq!(e.fingerprint().0.len(), 64);
    }

    #[test]
    fn fingerprint_ignores_error_text_but_not_class_or_content() {
        let id = identity();
        let w = state(RemoteStatus::Working);
        let a = PollError {
            class: ErrorClass::Timeout,
            message: "after 5s".into(),
        };
        let b = PollError {
            class: ErrorClass::Timeout,
            message: "after 9s".into(),
        };
        let c = PollError {
            class: ErrorClass::Server,
            message: "after 5s".into(),
        };
        let fa = Event::build(&id, &w, Some(&a)).unwrap().fingerprint();
        assert_eq!(fa, Event::build(&id, &w, Some(&b)).unwrap().fingerprint());
        assert_ne!(fa, Event::build(&id, &w, Some(&c)).unwrap().fingerprint());
        let mut done = state(RemoteStatus::Completed);
        let f1 = Event::build(&id, &done, None).unwrap().fingerprint();
        done.result = Some("42".into());
        assert_ne!(f1, Event::build(&id, &done, None).unwrap().fingerprint());
    }

    #[test]
    fn fingerprinted_events_are_storable_and_the_pair_agrees() {
        let mut s = state(RemoteStatus::Completed);
        s.result = Some("a\0b".into());
        let (e, fp) = Event::build(&identity(), &s, None).unwrap().fingerprinted();
        assert_eq!(e.result.as_deref(), Some("a\u{FFFD}b"));
        assert_eq!(fp, e.fingerprint());
    }

    #[test]
    fn shown_error_is_bounded() {
        let mut s = state(RemoteStatus::Failed);
        s.error = Some("x".repeat(4_000));
        let e = Event::build(&identity(), &s, None).unwrap();
        assert_eq!(e.error.unwrap().chars().count(), MAX_SHOWN_ERROR);
    }
}
