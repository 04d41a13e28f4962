//! Fresh task ids and the worker ids lanes claim with.
//!
//! Task ids come from a ChaCha20 stream seeded once from the operating system at start-up, so
//! no id call can fail later; two processes (or restarts) get independent seeds. Worker ids
//! name the host, the process and the lane: `host-pid-lane`.

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use std::sync::Mutex;
use tasklatch_core::ids::{IdSource, TaskId, WorkerId};

/// Task ids `tsk_` + 24 hex digits (96 random bits), the format of core's seeded ids.
pub struct RandomIds {
    rng: Mutex<ChaCha20Rng>,
}

impl RandomIds {
    /// A source seeded from the operating system's randomness.
    pub fn from_os() -> Result<Self, getrandom::Error> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed)?;
        Ok(RandomIds {
            rng: Mutex::new(ChaCha20Rng::from_seed(seed)),
        })
    }
}

impl IdSource for RandomIds {
    fn task_id(&self) -> TaskId {
        let mut bytes = [0u8; 12];
        self.rng
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .fill_bytes(&mut bytes);
        TaskId(format!("tsk_{}", hex::encode(bytes)))
    }
}

/// Longest host name kept in a worker id.
const MAX_HOST: usize = 64;

/// The lease owner of lane `lane` of this process: `host-pid-lane`. The host name is this
/// machine's (`/proc/sys/kernel/hostname`, else `$HOSTNAME`, else `host`), reduced to ASCII
/// letters, digits, `.` and `-`, and cut to 64 characters.
pub fn worker_id(lane: usize) -> WorkerId {
    let raw = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default();
    worker_id_of(&raw, std::process::id(), lane)
}

fn worker_id_of(host: &str, pid: u32, lane: usize) -> WorkerId {
    let host: String = host
        .trim()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'))
        .take(MAX_HOST)
        .collect();
    let host = if host.is_empty() { "host".into() } else { host };
    WorkerId::from(format!("{host}-{pid}-{lane}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_fresh_and_shaped_like_core_ids() {
        let ids = RandomIds::from_os().unwrap_or_else(|e| panic!("{e}"));
        let a = ids.task_id();
        let b = ids.task_id();
        assert_ne!(a, b);
        assert!(
            a.as_str().starts_with("tsk_") && a.as_str().len() == 28,
            "{a}"
        );
        let other = RandomIds::from_os().unwrap_or_else(|e| panic!("{e}"));
        assert_ne!(other.task_id(), a);
    }

    #[test]
    fn worker_ids_name_host_pid_and_lane() {
        assert_eq!(worker_id_of("box-1\n", 42, 0).as_str(), "box-1-42-0");
        assert_eq!(worker_id_of("", 7, 3).as_str(), "host-7-3");
        assert_eq!(worker_id_of("a b\u{1b}[31m", 1, 1).as_str(), "ab31m-1-1");
        let long = "h".repeat(500);
        assert!(worker_id_of(&long, 1, 1).as_str().len() <= MAX_HOST + 10);
        assert!(worker_id(2)
            .as_str()
            .ends_with(&format!("-{}-2", std::process::id())));
    }
}
