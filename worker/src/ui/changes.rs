//! The per-thread change signal: the worker's one listener (`crate::wakeup`) hands every
//! notification of [`CHANNEL`] to [`ThreadChanges::publish`], and every open panel stream
//! (`events`) picks the ones of its thread.
//!
//! **The channel contract** (migration 0027, a trigger on `tasks`): the payload is the
//! [`thread_key`] of the task's owner and thread, sent at commit of every write that changes
//! what the panel shows. A lost notification costs an open panel one poll, never a wrong
//! state: the panel always reads the store.
//!
//! One bounded [`broadcast`] channel carries the keys to every stream; a stream that falls
//! more than [`CAPACITY`] keys behind, or a listener that lost its connection, gets
//! [`Change::All`] and refreshes once.

use sha2::{Digest, Sha256};
use tasklatch_core::ids::{OwnerId, ThreadId};
use tokio::sync::broadcast;

/// The channel the store's trigger notifies.
pub const CHANNEL: &str = "tasklatch_thread_changes";
/// Keys buffered for the slowest stream before it is told [`Change::All`].
pub const CAPACITY: usize = 1_024;
/// Bytes of a key: 64 lower-case hex digits.
const KEY_LEN: usize = 64;

/// What changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// Something of the thread with this [`thread_key`].
    Thread(String),
    /// Anything may have changed (notifications were lost): every panel refreshes.
    All,
}

/// The fan-out from the listener to the panel streams.
#[derive(Clone)]
pub struct ThreadChanges {
    tx: broadcast::Sender<Change>,
}

impl Default for ThreadChanges {
    fn default() -> Self {
        ThreadChanges {
            tx: broadcast::channel(CAPACITY).0,
        }
    }
}

impl ThreadChanges {
    /// A notification's payload: a well-formed key reaches the streams, anything else is
    /// dropped (the channel is not ours to trust blindly: any session can notify).
    pub fn publish(&self, payload: &str) {
        let key = payload.len() == KEY_LEN
            && payload
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if key {
            // No stream open is no error.
            let _ = self.tx.send(Change::Thread(payload.to_owned()));
        }
    }

    /// Notifications may have been lost (the listener (re)connected): every stream refreshes.
    pub fn all(&self) {
        let _ = self.tx.send(Change::All);
    }

    /// The changes from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.tx.subscribe()
    }
}

/// The key of `owner`'s `thread`, as the trigger computes it: the lower-case hex SHA-256 of
/// `<characters in owner>:<owner><thread>` (unambiguous; 64 bytes whatever the ids' length,
/// far under NOTIFY's 8000-byte payload limit; no id on the channel).
pub fn thread_key(owner: &OwnerId, thread: &ThreadId) -> String {
    let text = format!("{}:{}{}", owner.0.chars().count(), owner.0, thread.0);
    hex::encode(Sha256::digest(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_the_triggers() {
        // SELECT encode(sha256(convert_to('5:alicet1', 'UTF8')), 'hex') in PostgreSQL 15.
        assert_eq!(
            thread_key(&OwnerId::from("alice"), &ThreadId::from("t1")),
            "747c7f2dfc92fb87749beb3b9d9ccfd286a78d9414bfbe93d3a0f4f51b217cca"
        );
        assert_ne!(
            thread_key(&OwnerId::from("ab"), &ThreadId::from("c")),
            thread_key(&OwnerId::from("a"), &ThreadId::from("bc"))
        );
    }

    #[tokio::test]
    async fn only_well_formed_keys_are_published() {
        let changes = ThreadChanges::default();
        let mut rx = changes.subscribe();
        let key = thread_key(&OwnerId::from("alice"), &ThreadId::from("t1"));
        changes.publish("submit");
        changes.publish(&key.to_uppercase());
        changes.publish(&key);
        changes.all();
        assert_eq!(rx.recv().await.ok(), Some(Change::Thread(key)));
        assert_eq!(rx.recv().await.ok(), Some(Change::All));
    }
}
