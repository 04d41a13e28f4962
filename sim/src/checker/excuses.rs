//! Which faults excuse lateness: the one place that decides, per fault kind, what a fault can
//! hold back. The rules that bound a delay (polls spaced in time, degraded tracking told in
//! time, stuck runs interrupted by their lane) ask here and nowhere else.
//!
//! The match below has no catch-all arm on purpose: a new [`FaultKind`] does not compile until
//! its author decides what it excuses (README, "Adding a fault kind").

use crate::fault::{FaultKind, Service};

/// Whose recorded events a fault can keep from being launched in time.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Launches {
    /// Nobody's: launches are still served in time (a 409 or a 500 carries the prompt too).
    None,
    /// Every task's.
    All,
    /// Only plan task `n`'s (its doomed versions).
    Task(u32),
}

/// Which lanes a fault freezes (stops from acting at all) while it lasts.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Freezes {
    /// None.
    None,
    /// Lane `lane` of worker `worker`.
    Lane {
        /// Plan worker number.
        worker: u32,
        /// Lane number.
        lane: u32,
    },
    /// Every lane of worker `worker`.
    Worker(u32),
}

/// What a fault can hold back.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Excuse {
    /// Whether it can keep workers from polling a task in time (rather than being served as a
    /// remote error, or touching only launches).
    pub polls: bool,
    /// Whose recorded events it can keep from being launched in time. Faults of the remote only
    /// shape the episode, which is read from what the store applied.
    pub launches: Launches,
    /// Which lanes it freezes.
    pub freezes: Freezes,
}

/// What a fault of `kind` can hold back (see [`Excuse`]).
pub fn excuse(kind: &FaultKind) -> Excuse {
    let (polls, launches, freezes) = match *kind {
        FaultKind::Crash { .. }
        | FaultKind::GracefulStop { .. }
        | FaultKind::Skew { .. }
        | FaultKind::StepAtNews { .. }
        | FaultKind::Latency { .. }
        | FaultKind::StoreDown => (true, Launches::All, Freezes::None),
        FaultKind::Pause { worker, lane } => (true, Launches::All, Freezes::Lane { worker, lane }),
        FaultKind::PauseAfterAnswer { worker, .. } => {
            (true, Launches::All, Freezes::Worker(worker))
        }
        FaultKind::Partition { service, .. } | FaultKind::Hold { service, .. } => {
            (true, launches_unless_mcp(service), Freezes::None)
        }
        FaultKind::LoseReplies { service, .. } => (
            service != Service::Gateway,
            launches_unless_mcp(service),
            Freezes::None,
        ),
        FaultKind::RemoteRestart | FaultKind::SlowRemote { .. } => {
            (true, Launches::None, Freezes::None)
        }
        FaultKind::RemoteErrors | FaultKind::RemoteDown { .. } => {
            (false, Launches::None, Freezes::None)
        }
        FaultKind::RefuseInserts => (true, Launches::None, Freezes::None),
        FaultKind::DoomedVersion { task, .. } => (false, Launches::Task(task), Freezes::None),
        FaultKind::GatewayBusy
        | FaultKind::GatewayErrors { .. }
        | FaultKind::LookupErrors
        | FaultKind::LostRuns
        | FaultKind::SlowRuns { .. }
        | FaultKind::StuckRuns
        | FaultKind::StubbornRuns { .. }
        | FaultKind::BadRuns { .. } => (false, Launches::None, Freezes::None),
    };
    Excuse {
        polls,
        launches,
        freezes,
    }
}

/// Launches wait on a worker's links to (or replies from) the store and the gateway, not on
/// the remote server's.
fn launches_unless_mcp(service: Service) -> Launches {
    if service == Service::Mcp {
        Launches::None
    } else {
        Launches::All
    }
}

impl Launches {
    /// Whether plan task `n`'s launches are held back.
    pub fn hold(self, n: u32) -> bool {
        match self {
            Launches::None => false,
            Launches::All => true,
            Launches::Task(task) => task == n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_faults_never_excuse_a_late_launch_and_gateway_faults_never_a_late_poll() {
        let remote = [
            FaultKind::RemoteErrors,
            FaultKind::RemoteRestart,
            FaultKind::SlowRemote { delay_ms: 1 },
        ];
        assert!(remote.iter().all(|k| excuse(k).launches == Launches::None));
        let gateway = [
            FaultKind::GatewayBusy,
            FaultKind::LostRuns,
            FaultKind::StuckRuns,
        ];
        assert!(gateway.iter().all(|k| !excuse(k).polls));
    }

    #[test]
    fn a_doomed_version_holds_back_only_its_own_task() {
        let doomed = excuse(&FaultKind::DoomedVersion { task: 3, run_ms: 1 }).launches;
        assert!(doomed.hold(3));
        assert!(!doomed.hold(4));
    }
}
