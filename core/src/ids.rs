//! Identifiers and the seedable id source.
//!
//! Ids are plain strings so every store keeps them verbatim. Ordering is byte order, which is
//! what Postgres uses for `COLLATE "C"` text: claims ordered by `(due, id)` agree across stores.

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Mutex;

macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub String);

        impl $name {
            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                $name(s.to_owned())
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                $name(s)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?})", stringify!($name), self.0)
            }
        }
    };
}

string_id!(
    /// The local id of a task (public: shown to its owner).
    TaskId
);
string_id!(
    /// The user who owns a task.
    OwnerId
);
string_id!(
    /// The conversation a task is bound to; notifications are runs on this thread.
    ThreadId
);
string_id!(
    /// The remote tool server a task runs on.
    ServerId
);
string_id!(
    /// A worker process (or one lane of it): the owner recorded on the leases it takes.
    WorkerId
);
string_id!(
    /// An agent run started by the launcher.
    RunId
);

/// A source of fresh ids. Deterministic when seeded; core never reads OS randomness.
pub trait IdSource: Send + Sync {
    /// A new task id, unique for this source.
    fn task_id(&self) -> TaskId;
}

/// Ids from a ChaCha8 stream: the same seed yields the same ids in the same order.
pub struct SeededIds {
    rng: Mutex<ChaCha8Rng>,
}

impl SeededIds {
    /// A source whose ids are a function of `seed` and call order.
    pub fn new(seed: u64) -> Self {
        SeededIds {
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(seed)),
        }
    }
}

impl IdSource for SeededIds {
    fn task_id(&self) -> TaskId {
        let mut rng = self.rng.lock().unwrap_or_else(|p| p.into_inner());
        let mut bytes = [0u8; 12];
        rng.fill_bytes(&mut bytes);
        TaskId(format!("tsk_{}", hex::encode(bytes)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_ids_repeat_per_seed_and_differ_across_seeds() {
        let a = SeededIds::new(7);
        let b = SeededIds::new(7);
        let c = SeededIds::new(8);
        let xs: Vec<_> = (0..5).map(|_| a.task_id()).collect();
        let ys: Vec<_> = (0..5).map(|_| b.task_id()).collect();
        let zs: Vec<_> = (0..5).map(|_| c.task_id()).collect();
        assert_eq!(xs, ys);
        assert_ne!(xs, zs);
        assert!(xs[0].as_str().starts_with("tsk_") && xs[0].as_str().len() == 28);
    }
}
