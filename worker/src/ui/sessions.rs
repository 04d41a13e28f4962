//! Browser sessions: a bearer token (or the trusted proxy's header) is exchanged once for a
//! random session id held in a cookie; the worker keeps, in memory, each session's owner, its
//! CSRF token and its expiry.
//!
//! Contract: an id is 256 random bits from the OS, shown to the browser once (the cookie) and
//! kept here only as its SHA-256, so neither a memory dump of the map nor a lookup's timing
//! gives a usable id. A session ends at its expiry (`ui.session_minutes` after the exchange;
//! no sliding renewal) or when evicted: at most [`MAX_SESSIONS`] live at once, and a new one
//! beyond that evicts the one closest to its end. Sessions are per process: a restart, or
//! another worker behind a load balancer without affinity, asks for the token again.

use crate::token::hash_token;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tasklatch_core::ids::OwnerId;

/// Sessions kept at most (each a few hundred bytes).
pub const MAX_SESSIONS: usize = 10_000;
/// Bytes of randomness in a session id and in a CSRF token (256 bits).
const RANDOM_BYTES: usize = 32;

/// One browser session.
#[derive(Clone, Debug)]
pub struct Session {
    /// Whose tasks the browser may see and steer.
    pub owner: OwnerId,
    /// The synchronizer token every state-changing request of this session carries.
    pub csrf: String,
    expires: Instant,
}

/// The live sessions, by the SHA-256 of their id.
pub struct Sessions {
    ttl: Duration,
    live: Mutex<HashMap<String, Session>>,
}

impl Sessions {
    /// No session yet; each lasts `ttl` from its start.
    pub fn new(ttl: Duration) -> Self {
        Sessions {
            ttl,
            live: Mutex::new(HashMap::new()),
        }
    }

    /// Starts a session for `owner`: its id (for the cookie, never kept) or `Err` when the OS
    /// gave no randomness.
    pub fn start(&self, owner: OwnerId) -> Result<String, getrandom::Error> {
        let id = random_hex()?;
        let session = Session {
            owner,
            csrf: random_hex()?,
            expires: Instant::now() + self.ttl,
        };
        let mut live = self.lock();
        let now = Instant::now();
        live.retain(|_, s| s.expires > now);
        if live.len() >= MAX_SESSIONS {
            let soonest = live
                .iter()
                .min_by_key(|(_, s)| s.expires)
                .map(|(k, _)| k.clone());
            if let Some(k) = soonest {
                live.remove(&k);
            }
        }
        live.insert(hash_token(&id), session);
        Ok(id)
    }

    /// The live session of cookie value `id`, if any (an expired one is removed).
    pub fn get(&self, id: &str) -> Option<Session> {
        let key = hash_token(id);
        let mut live = self.lock();
        match live.get(&key) {
            Some(s) if s.expires > Instant::now() => Some(s.clone()),
            Some(_) => {
                live.remove(&key);
                None
            }
            None => None,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        // A panic while holding the lock leaves a consistent map: every write is one call.
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn random_hex() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; RANDOM_BYTES];
    getrandom::fill(&mut bytes)?;
    Ok(hex::encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_found_by_its_id_only_and_ends_at_its_expiry() {
        let sessions = Sessions::new(Duration::from_millis(50));
        let id = sessions
            .start(OwnerId::from("alice"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(id.len(), 64);
        let s = sessions.get(&id).unwrap_or_else(|| panic!("live"));
        assert_eq!(s.owner, OwnerId::from("alice"));
        assert_eq!(s.csrf.len(), 64);
        assert_ne!(s.csrf, id);
        assert!(
            sessions.get(&hash_token(&id)).is_none(),
            "the stored key is no id"
        );
        std::thread::sleep(Duration::from_millis(60));
        assert!(sessions.get(&id).is_none());
        assert!(
            sessions.lock().is_empty(),
            "the expired session was removed"
        );
    }

    #[test]
    fn the_count_is_bounded() {
        let sessions = Sessions::new(Duration::from_secs(60));
        let first = sessions
            .start(OwnerId::from("a"))
            .unwrap_or_else(|e| panic!("{e}"));
        for _ in 0..MAX_SESSIONS {
            sessions
                .start(OwnerId::from("b"))
                .unwrap_or_else(|e| panic!("{e}"));
        }
        assert_eq!(sessions.lock().len(), MAX_SESSIONS);
        assert!(sessions.get(&first).is_none(), "the oldest was evicted");
    }
}
