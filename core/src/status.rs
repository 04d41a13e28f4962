//! The state enums of a task row: remote status, notification status, cancel status, answer status.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

macro_rules! text_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name { $($(#[$vdoc])* $variant),+ }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The stored and displayed spelling.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl FromStr for $name {
            type Err = UnknownValue;
            fn from_str(s: &str) -> Result<Self, UnknownValue> {
                match s { $($text => Ok($name::$variant),)+ _ => Err(UnknownValue(stringify!($name))) }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(self.as_str()) }
        }
    };
}

/// A string that is not a spelling of the named enum.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a valid {0}")]
pub struct UnknownValue(pub &'static str);

text_enum!(
    /// Where the remote job is (DOMAIN §1).
    RemoteStatus {
        /// Local only: persisted, never polled yet.
        Submitted = "submitted",
        /// Running remotely.
        Working = "working",
        /// The remote job waits for an answer from the user.
        InputRequired = "input_required",
        /// Finished with a result.
        Completed = "completed",
        /// Finished with an error.
        Failed = "failed",
        /// Cancelled.
        Cancelled = "cancelled",
    }
);

text_enum!(
    /// Where the user's answer to an `input_required` question is. Only the latest
    /// answer is kept; its text is dropped once an attempt to send it was made.
    AnswerStatus {
        /// No answer recorded.
        None = "none",
        /// Recorded; the next poll claim sends it.
        Pending = "pending",
        /// A poll claim marked the attempt; the send is in flight under that claim's token.
        Sending = "sending",
        /// The driver confirmed it: the server accepted the answer.
        Sent = "sent",
        /// An attempt was made but its outcome is unknown (the sender crashed, lost its lease or
        /// the call timed out). It is never sent again (at most once).
        Unconfirmed = "unconfirmed",
        /// The driver refused it or the server rejected it; nothing more is tried.
        Failed = "failed",
    }
);

impl RemoteStatus {
    /// Still worth polling.
    pub fn is_pollable(self) -> bool {
        matches!(
            self,
            RemoteStatus::Submitted | RemoteStatus::Working | RemoteStatus::InputRequired
        )
    }

    /// Never changes again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            RemoteStatus::Completed | RemoteStatus::Failed | RemoteStatus::Cancelled
        )
    }

    /// Worth telling the conversation about.
    pub fn needs_attention(self) -> bool {
        self == RemoteStatus::InputRequired || self.is_terminal()
    }
}

text_enum!(
    /// Where the notification of the latest event is (DOMAIN §3).
    NotifyStatus {
        /// Nothing to deliver.
        None = "none",
        /// A version waits to be claimed; no frozen snapshot.
        Pending = "pending",
        /// Claimed; the snapshot is frozen, no run started yet.
        Claimed = "claimed",
        /// A run was started for the frozen snapshot.
        Dispatched = "dispatched",
        /// The run failed; the same snapshot is retried with the next attempt.
        Retry = "retry",
        /// The latest version was delivered.
        Delivered = "delivered",
        /// One snapshot was given up (thread gone, or failure budget spent).
        DeadLetter = "dead_letter",
    }
);

impl NotifyStatus {
    /// A dispatch is under way: a new version must not overwrite the frozen snapshot.
    pub fn in_flight(self) -> bool {
        matches!(
            self,
            NotifyStatus::Claimed | NotifyStatus::Dispatched | NotifyStatus::Retry
        )
    }

    /// A claim may take the row (given pending work, due, and a free lease).
    pub fn claimable(self) -> bool {
        matches!(
            self,
            NotifyStatus::Pending
                | NotifyStatus::Claimed
                | NotifyStatus::Retry
                | NotifyStatus::Dispatched
        )
    }
}

text_enum!(
    /// Where a cancel request is (DOMAIN §6).
    CancelStatus {
        /// No cancel was requested.
        None = "none",
        /// Requested: the cancel loop will call the remote server.
        Requested = "requested",
        /// The remote cancel returned a terminal snapshot, which was applied.
        Done = "done",
        /// The cancel budget was spent; visible, never retried silently.
        DeadLetter = "dead_letter",
    }
);

text_enum!(
    /// Why a snapshot was dead-lettered.
    DeadLetterReason {
        /// The launcher said the thread is gone (404).
        ThreadGone = "thread_gone",
        /// The failure budget was spent.
        Budget = "budget",
        /// The launcher stayed unreachable (or answered 5xx) for `max_unavailable`.
        Unavailable = "unavailable",
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip() {
        for s in RemoteStatus::ALL {
            assert_eq!(s.as_str().parse::<RemoteStatus>(), Ok(*s));
        }
        for s in NotifyStatus::ALL {
            assert_eq!(s.as_str().parse::<NotifyStatus>(), Ok(*s));
        }
        for s in CancelStatus::ALL {
            assert_eq!(s.as_str().parse::<CancelStatus>(), Ok(*s));
        }
        assert!("Working".parse::<RemoteStatus>().is_err());
    }

    #[test]
    fn remote_status_classes() {
        use RemoteStatus::*;
        let pollable: Vec<_> = RemoteStatus::ALL
            .iter()
            .filter(|s| s.is_pollable())
            .copied()
            .collect();
        assert_eq!(pollable, vec![Submitted, Working, InputRequired]);
        let attention: Vec<_> = RemoteStatus::ALL
            .iter()
            .filter(|s| s.needs_attention())
            .copied()
            .collect();
        assert_eq!(attention, vec![InputRequired, Completed, Failed, Cancelled]);
    }

    #[test]
    fn notify_status_classes() {
        use NotifyStatus::*;
        let in_flight: Vec<_> = NotifyStatus::ALL
            .iter()
            .filter(|s| s.in_flight())
            .copied()
            .collect();
        assert_eq!(in_flight, vec![Claimed, Dispatched, Retry]);
        let claimable: Vec<_> = NotifyStatus::ALL
            .iter()
            .filter(|s| s.claimable())
            .copied()
            .collect();
        assert_eq!(claimable, vec![Pending, Claimed, Dispatched, Retry]);
    }
}
