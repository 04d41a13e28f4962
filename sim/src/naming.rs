//! How the simulation names things: owners, threads, tasks and hosts.
//!
//! Hosts, the checker and the reports all derive names from plan numbers here, so a name the
//! user host submits under is the name the checker expects and the report draws a lane for.

/// Every task label starts with this (`task-{n}`).
const TASK_PREFIX: &str = "task-";
/// Every worker host name starts with this (`worker-{w}`).
const WORKER_PREFIX: &str = "worker-";
/// The users' host, and the lane of their own engine (submits and their compensations).
pub const USER_HOST: &str = "user";

/// Owner name of owner number `o`.
pub fn owner_name(o: u32) -> String {
    format!("user-{o}")
}

/// Thread name of thread `t` of owner `o`.
pub fn thread_name(o: u32, t: u32) -> String {
    format!("user-{o}-thread-{t}")
}

/// The name users give task `n` (what a cancel by name matches).
pub fn task_name(n: u32) -> String {
    format!("job-{n}")
}

/// The label of plan task `n` in the history, the checker and the reports (`task-{n}`); it is
/// also the input the user submits, which tells the remote server the task's script.
pub fn task_label(n: u32) -> String {
    format!("{TASK_PREFIX}{n}")
}

/// The task number of a task label (`task-7` → 7), if it is one.
pub fn task_number(label: &str) -> Option<u64> {
    label.strip_prefix(TASK_PREFIX)?.parse().ok()
}

/// The host name of worker `w`.
pub fn worker_host(w: u32) -> String {
    format!("{WORKER_PREFIX}{w}")
}

/// The worker number of a worker host name (`worker-2` → 2), if it is one.
pub fn worker_number(host: &str) -> Option<u32> {
    host.strip_prefix(WORKER_PREFIX)?.parse().ok()
}

/// Whether `host` is named like a worker host.
pub fn is_worker_host(host: &str) -> bool {
    host.starts_with(WORKER_PREFIX)
}

/// The caller name of engine lane `lane` of worker `w` (`worker-{w}/{lane}`).
pub fn lane_name(w: u32, lane: u32) -> String {
    format!("{WORKER_PREFIX}{w}/{lane}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        assert_eq!(task_number(&task_label(12)), Some(12));
        assert_eq!(task_number("task-x"), None);
        assert_eq!(worker_number(&worker_host(3)), Some(3));
        assert_eq!(worker_number("user"), None);
        assert!(lane_name(1, 0).starts_with(&worker_host(1)));
    }
}
