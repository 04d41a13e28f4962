//! Timed faults: what each kind is, which hosts it hits, what it is called, how it weakens and
//! how the timeline draws it.
//!
//! Every question about a fault kind is answered here by an exhaustive match (no catch-all
//! arm), so the compiler lists every place a new kind must be described. Adding a kind touches
//! this file, `generate.rs` (drawing it from a seed) and the one host or world module that
//! makes it happen (see the README, "Adding a fault kind").

use crate::plan::naming::worker_host;
use crate::plan::timing::LEASE_MS;
use serde::{Deserialize, Serialize};

crate::plan::marks::marks! {
    /// The coverage mark of a fault kind taking effect ([`Fault::feature`]).
    enum FaultMark {
        /// A worker crashed and restarted.
        WorkerCrashRestart = "worker_crash_restart";
        /// A worker stopped gracefully and restarted.
        WorkerGracefulStop = "worker_graceful_stop";
        /// The remote server restarted and forgot its legacy tasks.
        RemoteRestartForgets = "remote_restart_forgets";
        /// A worker lane paused past its lease.
        WorkerPausePastLease = "worker_pause_past_lease";
        /// A worker lane stalled within its lease.
        WorkerStallWithinLease = "worker_stall_within_lease";
        /// A worker lost its link to the store.
        PartitionWorkerDb = "partition_worker_db";
        /// A worker lost its link to the remote server.
        PartitionWorkerMcp = "partition_worker_mcp";
        /// A worker lost its link to the launcher.
        PartitionWorkerGateway = "partition_worker_gateway";
        /// A worker's link to the store held messages.
        HoldWorkerDb = "hold_worker_db";
        /// A worker's link to the remote server held messages.
        HoldWorkerMcp = "hold_worker_mcp";
        /// A worker's link to the launcher held messages.
        HoldWorkerGateway = "hold_worker_gateway";
        /// The store committed and lost the reply.
        ReplyLostAfterCommitDb = "reply_lost_after_commit_db";
        /// The remote server did the work and lost the reply.
        ReplyLostAfterCommitMcp = "reply_lost_after_commit_mcp";
        /// The launcher did the work and lost the reply.
        ReplyLostAfterCommitGateway = "reply_lost_after_commit_gateway";
        /// The network slowed down.
        LatencySpike = "latency_spike";
        /// A worker's clock was skewed.
        ClockSkew = "clock_skew";
        /// A worker paused right after an answer.
        WorkerPauseAfterAnswer = "worker_pause_after_answer";
        /// A worker's clock was set to step back at news.
        WorkerClockStepAtNews = "worker_clock_step_at_news";
        /// The launcher answered 409 for a while.
        Launcher409Window = "launcher_409_window";
        /// The launcher failed transiently.
        LauncherTransientError = "launcher_transient_error";
        /// The launcher failed after creating the run.
        LauncherErrorAfterCommit = "launcher_error_after_commit";
        /// The launcher's lookups failed.
        LauncherLookupError = "launcher_lookup_error";
        /// Runs went missing.
        RunMissing = "run_missing";
        /// Runs were slow.
        RunSlow = "run_slow";
        /// Runs got stuck.
        RunStuck = "run_stuck";
        /// One task's versions were doomed to fail.
        RunVersionDoomed = "run_version_doomed";
        /// Runs failed.
        RunFailed = "run_failed";
        /// Runs timed out.
        RunTimedOut = "run_timed_out";
        /// Runs were interrupted.
        RunInterrupted = "run_interrupted";
        /// The remote server failed transiently.
        RemoteTransientError = "remote_transient_error";
        /// One remote task's server went down.
        RemoteTaskDown = "remote_task_down";
        /// The store refused inserts.
        StoreInsertRefused = "store_insert_refused";
        /// Runs ignored interrupts.
        RunIgnoresInterrupt = "run_ignores_interrupt";
        /// The store was down.
        StoreDown = "store_down";
        /// The remote server was slow.
        RemoteSlow = "remote_slow";
        /// The launcher created a run and lost the create's reply (unlisted at first in
        /// `langgraph` mode).
        LauncherCreateAckLost = "launcher_create_ack_lost";
    }
}

/// A service a worker talks to.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Service {
    /// The store host.
    Db,
    /// The remote task server.
    Mcp,
    /// The run launcher.
    Gateway,
}

impl Service {
    /// Every service.
    pub const ALL: [Service; 3] = [Service::Db, Service::Mcp, Service::Gateway];

    /// The turmoil host name.
    pub fn host(self) -> &'static str {
        match self {
            Service::Db => "db",
            Service::Mcp => "mcp",
            Service::Gateway => "gateway",
        }
    }
}

/// How a bad run ends.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BadEnd {
    /// The run errors.
    Error,
    /// The run times out.
    Timeout,
    /// The run is interrupted.
    Interrupted,
}

/// A timed fault: active from `at_ms` for `for_ms`.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    /// Start.
    pub at_ms: u64,
    /// Duration.
    pub for_ms: u64,
    /// What goes wrong.
    pub kind: FaultKind,
}

/// What a timed fault does.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// The worker crashes and restarts when the fault ends.
    Crash {
        /// Worker number.
        worker: u32,
    },
    /// The worker shuts down gracefully (as on SIGTERM: nothing new started, claims not acted
    /// on released) and starts again when the fault ends.
    GracefulStop {
        /// Worker number.
        worker: u32,
    },
    /// The remote server restarts and forgets every task of its legacy side (the tasks whose
    /// server rejects a cancel of a finished task): from then on it knows none of them.
    RemoteRestart,
    /// One lane of a worker stalls (a long pause) at its next call return.
    Pause {
        /// Worker number.
        worker: u32,
        /// Lane number.
        lane: u32,
    },
    /// Messages between the worker and the service are dropped.
    Partition {
        /// Worker number.
        worker: u32,
        /// The other side.
        service: Service,
    },
    /// Messages between the worker and the service are held back until the fault ends.
    Hold {
        /// Worker number.
        worker: u32,
        /// The other side.
        service: Service,
    },
    /// The service does the work, then drops every `one_in`-th reply.
    LoseReplies {
        /// The service.
        service: Service,
        /// Period of dropped replies.
        one_in: u32,
    },
    /// Message latency may reach `max_ms`.
    Latency {
        /// Upper bound.
        max_ms: u64,
    },
    /// The first lane of the worker to send a user's answer while the fault lasts stalls for
    /// `pause_ms` once the remote server took it, before the engine learns the outcome: with a
    /// pause past the lease, the outcome write is fenced and the next poll claim finds the
    /// attempt without an outcome (it must never send the answer again).
    PauseAfterAnswer {
        /// Worker number.
        worker: u32,
        /// How long the lane stalls.
        pause_ms: u64,
        /// When not 0, the worker's wall clock steps back this far as the pause begins and
        /// stays back until 20 s after it ends (a VM frozen, then stepped by NTP): measured on
        /// that clock the lane's lease looks longer than it is.
        #[serde(default, skip_serializing_if = "is_zero")]
        clock_back_ms: u64,
    },
    /// On the worker's first status call after the fault's start that finds a task no longer
    /// `working`, its wall clock steps back `back_ms` as the answer arrives and stays back
    /// 20 s (NTP stepping a clock mid-pass): the poll's write, and the notification it hands
    /// off, are stamped by the stepped clock.
    StepAtNews {
        /// Worker number.
        worker: u32,
        /// How far the clock steps back.
        back_ms: u64,
    },
    /// The worker's clock is off by `skew_ms`.
    Skew {
        /// Worker number.
        worker: u32,
        /// Offset (may be negative).
        skew_ms: i64,
    },
    /// Every launch answers 409.
    GatewayBusy,
    /// Launches fail with a server error; after the run was created if `after_commit`.
    GatewayErrors {
        /// Create the run, then fail.
        after_commit: bool,
    },
    /// Run lookups fail.
    LookupErrors,
    /// Runs started now are lost by the gateway: they never deliver; lookups answer "missing".
    LostRuns,
    /// Runs started now take `run_ms`.
    SlowRuns {
        /// Run length.
        run_ms: u64,
    },
    /// Runs started now never end by themselves (the agent hangs): only an interrupt ends them.
    StuckRuns,
    /// The store refuses every insert (as a host database's own constraint or trigger would):
    /// a submit meeting it must cancel its remote task (the compensation). Since submits store
    /// their intent first (DOMAIN §7), the refusal strikes the row's handle write: the row that
    /// would make the started task tracked.
    RefuseInserts,
    /// Runs started now ignore interrupts (the agent server answers the interrupt with an
    /// error and the run goes on) and end successfully after `run_ms`, beyond the engine's
    /// `max_run_life`: the late success must deliver its version, and no second run may.
    StubbornRuns {
        /// Run length.
        run_ms: u64,
    },
    /// The database is unreachable (a failover): every store call fails as unavailable.
    /// Drawn to begin just after a submit stored its intent, so the submit's handle write
    /// meets it and must be retried until the store answers (DOMAIN §7).
    StoreDown,
    /// The first version of task `task` launched now is doomed: every run of that version
    /// started while the fault lasts fails after `run_ms`, until its failure budget is spent.
    /// Other versions of the task run normally, so a newer state that lands during the doomed
    /// dispatch must still be delivered (a dead letter kills one snapshot, never the channel).
    DoomedVersion {
        /// Plan task number.
        task: u32,
        /// How long each doomed run takes before it fails.
        run_ms: u64,
    },
    /// Runs started now end badly.
    BadRuns {
        /// How.
        end: BadEnd,
    },
    /// The remote server answers polls and cancels with transient errors.
    RemoteErrors,
    /// The remote server answers polls, cancels and answers about one task with transient
    /// errors (its shard is down), long enough for tracking to degrade.
    RemoteDown {
        /// Plan task number.
        task: u32,
    },
    /// The remote server answers after `delay_ms`.
    SlowRemote {
        /// Delay.
        delay_ms: u64,
    },
    /// The launcher creates the run, then drops the reply of every `one_in`-th create (a
    /// launch that made a run, in either gateway mode). In `langgraph` mode the run is also
    /// missing from the first listing of its thread after that create — a replica behind the
    /// primary that took it — so the next look of its key may miss it and create a second run,
    /// which the look after that create must see (the launcher's "two looks").
    LostCreateAcks {
        /// Period of dropped create replies.
        one_in: u32,
    },
}

/// Which hosts a fault hits.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Target {
    /// One worker host.
    Worker(u32),
    /// The link between a worker and a service (both ends).
    Link {
        /// The worker end.
        worker: u32,
        /// The service end.
        service: Service,
    },
    /// One service host.
    Service(Service),
    /// The whole network: every host.
    Network,
}

impl Target {
    /// The worker the fault is bound to, if any (a plan with fewer workers cannot hold it).
    pub fn worker(self) -> Option<u32> {
        match self {
            Target::Worker(worker) | Target::Link { worker, .. } => Some(worker),
            Target::Service(_) | Target::Network => None,
        }
    }

    /// The hosts hit, worker first; `None` for the whole network.
    pub fn hosts(self) -> Option<Vec<String>> {
        match self {
            Target::Worker(w) => Some(vec![worker_host(w)]),
            Target::Link { worker, service } => {
                Some(vec![worker_host(worker), service.host().to_owned()])
            }
            Target::Service(s) => Some(vec![s.host().to_owned()]),
            Target::Network => None,
        }
    }
}

/// How the timeline report draws a fault.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Look {
    /// CSS class of the fault's band.
    pub band: &'static str,
    /// Its window's start and end are marked on the worker lane (a crash and a restart).
    pub window_marks: bool,
    /// When it takes effect the lane stalls for the fault's duration (a pause).
    pub stall: bool,
}

impl Look {
    const fn band(band: &'static str) -> Look {
        Look {
            band,
            window_marks: false,
            stall: false,
        }
    }
}

impl Fault {
    /// Whether the fault is active at `t_ms`.
    pub fn active(&self, t_ms: u64) -> bool {
        self.at_ms <= t_ms && t_ms < self.at_ms + self.for_ms
    }

    /// The fault's coverage name (`worker_crash_restart`, `partition_worker_db`, …).
    pub fn name(&self) -> &'static str {
        self.feature().name()
    }

    /// The fault's coverage mark.
    pub fn feature(&self) -> FaultMark {
        match &self.kind {
            FaultKind::Crash { .. } => FaultMark::WorkerCrashRestart,
            FaultKind::GracefulStop { .. } => FaultMark::WorkerGracefulStop,
            FaultKind::RemoteRestart => FaultMark::RemoteRestartForgets,
            FaultKind::Pause { .. } if self.for_ms > LEASE_MS => FaultMark::WorkerPausePastLease,
            FaultKind::Pause { .. } => FaultMark::WorkerStallWithinLease,
            FaultKind::Partition { service, .. } => match service {
                Service::Db => FaultMark::PartitionWorkerDb,
                Service::Mcp => FaultMark::PartitionWorkerMcp,
                Service::Gateway => FaultMark::PartitionWorkerGateway,
            },
            FaultKind::Hold { service, .. } => match service {
                Service::Db => FaultMark::HoldWorkerDb,
                Service::Mcp => FaultMark::HoldWorkerMcp,
                Service::Gateway => FaultMark::HoldWorkerGateway,
            },
            FaultKind::LoseReplies { service, .. } => match service {
                Service::Db => FaultMark::ReplyLostAfterCommitDb,
                Service::Mcp => FaultMark::ReplyLostAfterCommitMcp,
                Service::Gateway => FaultMark::ReplyLostAfterCommitGateway,
            },
            FaultKind::Latency { .. } => FaultMark::LatencySpike,
            FaultKind::Skew { .. } => FaultMark::ClockSkew,
            FaultKind::PauseAfterAnswer { .. } => FaultMark::WorkerPauseAfterAnswer,
            FaultKind::StepAtNews { .. } => FaultMark::WorkerClockStepAtNews,
            FaultKind::GatewayBusy => FaultMark::Launcher409Window,
            FaultKind::GatewayErrors {
                after_commit: false,
            } => FaultMark::LauncherTransientError,
            FaultKind::GatewayErrors { after_commit: true } => FaultMark::LauncherErrorAfterCommit,
            FaultKind::LookupErrors => FaultMark::LauncherLookupError,
            FaultKind::LostRuns => FaultMark::RunMissing,
            FaultKind::SlowRuns { .. } => FaultMark::RunSlow,
            FaultKind::StuckRuns => FaultMark::RunStuck,
            FaultKind::DoomedVersion { .. } => FaultMark::RunVersionDoomed,
            FaultKind::BadRuns { end } => match end {
                BadEnd::Error => FaultMark::RunFailed,
                BadEnd::Timeout => FaultMark::RunTimedOut,
                BadEnd::Interrupted => FaultMark::RunInterrupted,
            },
            FaultKind::RemoteErrors => FaultMark::RemoteTransientError,
            FaultKind::RemoteDown { .. } => FaultMark::RemoteTaskDown,
            FaultKind::RefuseInserts => FaultMark::StoreInsertRefused,
            FaultKind::StubbornRuns { .. } => FaultMark::RunIgnoresInterrupt,
            FaultKind::StoreDown => FaultMark::StoreDown,
            FaultKind::SlowRemote { .. } => FaultMark::RemoteSlow,
            FaultKind::LostCreateAcks { .. } => FaultMark::LauncherCreateAckLost,
        }
    }
}

impl FaultKind {
    /// Which hosts the fault hits.
    pub fn target(&self) -> Target {
        match *self {
            FaultKind::Crash { worker }
            | FaultKind::GracefulStop { worker }
            | FaultKind::Pause { worker, .. }
            | FaultKind::Skew { worker, .. }
            | FaultKind::PauseAfterAnswer { worker, .. }
            | FaultKind::StepAtNews { worker, .. } => Target::Worker(worker),
            FaultKind::Partition { worker, service } | FaultKind::Hold { worker, service } => {
                Target::Link { worker, service }
            }
            FaultKind::LoseReplies { service, .. } => Target::Service(service),
            FaultKind::Latency { .. } => Target::Network,
            FaultKind::GatewayBusy
            | FaultKind::GatewayErrors { .. }
            | FaultKind::LookupErrors
            | FaultKind::LostRuns
            | FaultKind::SlowRuns { .. }
            | FaultKind::StuckRuns
            | FaultKind::StubbornRuns { .. }
            | FaultKind::DoomedVersion { .. }
            | FaultKind::LostCreateAcks { .. }
            | FaultKind::BadRuns { .. } => Target::Service(Service::Gateway),
            FaultKind::RemoteErrors
            | FaultKind::RemoteDown { .. }
            | FaultKind::RemoteRestart
            | FaultKind::SlowRemote { .. } => Target::Service(Service::Mcp),
            FaultKind::RefuseInserts | FaultKind::StoreDown => Target::Service(Service::Db),
        }
    }

    /// What the fault hits and how hard, in words (`worker-0 ↔ db`, `network: up to 635 ms`, …).
    pub fn detail(&self) -> String {
        match self {
            FaultKind::Crash { worker } | FaultKind::GracefulStop { worker } => {
                worker_host(*worker)
            }
            FaultKind::RemoteRestart => "mcp: legacy tasks forgotten".to_owned(),
            FaultKind::Pause { worker, lane } => format!("{} lane {lane}", worker_host(*worker)),
            FaultKind::Partition { worker, service } | FaultKind::Hold { worker, service } => {
                format!("{} ↔ {}", worker_host(*worker), service.host())
            }
            FaultKind::LoseReplies { service, one_in } => {
                format!("{}: 1 reply in {one_in}", service.host())
            }
            FaultKind::LostCreateAcks { one_in } => {
                format!("gateway: 1 create reply in {one_in}, its run listed late")
            }
            FaultKind::Latency { max_ms } => format!("network: up to {max_ms} ms"),
            FaultKind::Skew { worker, skew_ms } => {
                format!("{}: {skew_ms:+} ms", worker_host(*worker))
            }
            FaultKind::PauseAfterAnswer {
                worker,
                pause_ms,
                clock_back_ms: 0,
            } => format!("{}: {pause_ms} ms after an answer", worker_host(*worker)),
            FaultKind::PauseAfterAnswer {
                worker,
                pause_ms,
                clock_back_ms,
            } => format!(
                "{}: {pause_ms} ms after an answer, its clock stepped back {clock_back_ms} ms",
                worker_host(*worker)
            ),
            FaultKind::StepAtNews { worker, back_ms } => format!(
                "{}: clock stepped back {back_ms} ms as a poll brings news",
                worker_host(*worker)
            ),
            FaultKind::SlowRuns { run_ms } => format!("gateway: runs take {run_ms} ms"),
            FaultKind::SlowRemote { delay_ms } => format!("mcp: {delay_ms} ms delay"),
            FaultKind::DoomedVersion { task, run_ms } => {
                format!("gateway: runs of one version of task-{task} fail after {run_ms} ms")
            }
            FaultKind::GatewayBusy
            | FaultKind::GatewayErrors { .. }
            | FaultKind::LookupErrors
            | FaultKind::LostRuns
            | FaultKind::StuckRuns
            | FaultKind::BadRuns { .. } => "gateway".to_owned(),
            FaultKind::RemoteErrors => "mcp".to_owned(),
            FaultKind::RemoteDown { task } => format!("mcp: task-{task} down"),
            FaultKind::RefuseInserts => "db: inserts refused".to_owned(),
            FaultKind::StubbornRuns { run_ms } => {
                format!("gateway: runs ignore interrupts and succeed after {run_ms} ms")
            }
            FaultKind::StoreDown => "db: unreachable".to_owned(),
        }
    }

    /// How the timeline draws the fault.
    pub fn look(&self) -> Look {
        match self {
            FaultKind::Crash { .. } | FaultKind::GracefulStop { .. } => Look {
                window_marks: true,
                ..Look::band("fc")
            },
            FaultKind::Pause { .. } => Look {
                stall: true,
                ..Look::band("fp")
            },
            FaultKind::PauseAfterAnswer { .. } => Look::band("fp"),
            FaultKind::Partition { .. }
            | FaultKind::Hold { .. }
            | FaultKind::LoseReplies { .. }
            | FaultKind::LostCreateAcks { .. } => Look::band("fn"),
            FaultKind::Latency { .. } => Look::band("fl"),
            FaultKind::Skew { .. } | FaultKind::StepAtNews { .. } => Look::band("fk"),
            FaultKind::RemoteErrors
            | FaultKind::RemoteDown { .. }
            | FaultKind::RemoteRestart
            | FaultKind::SlowRemote { .. } => Look::band("fr"),
            FaultKind::RefuseInserts | FaultKind::StoreDown => Look::band("fn"),
            FaultKind::GatewayBusy
            | FaultKind::GatewayErrors { .. }
            | FaultKind::LookupErrors
            | FaultKind::LostRuns
            | FaultKind::SlowRuns { .. }
            | FaultKind::StuckRuns
            | FaultKind::StubbornRuns { .. }
            | FaultKind::DoomedVersion { .. }
            | FaultKind::BadRuns { .. } => Look::band("fg"),
        }
    }

    /// A gentler version of the fault (rarer, smaller, shorter), for shrinking; `None` when
    /// it has no strength to lower or is already mild.
    pub fn milder(&self) -> Option<FaultKind> {
        match *self {
            FaultKind::LoseReplies { service, one_in } if one_in < 64 => {
                Some(FaultKind::LoseReplies {
                    service,
                    one_in: one_in * 2,
                })
            }
            FaultKind::LostCreateAcks { one_in } if one_in < 64 => {
                Some(FaultKind::LostCreateAcks { one_in: one_in * 2 })
            }
            FaultKind::Latency { max_ms } if max_ms >= 100 => {
                Some(FaultKind::Latency { max_ms: max_ms / 2 })
            }
            FaultKind::StepAtNews { worker, back_ms } if back_ms >= 16_000 => {
                Some(FaultKind::StepAtNews {
                    worker,
                    back_ms: back_ms / 2,
                })
            }
            FaultKind::Skew { worker, skew_ms } if skew_ms.abs() >= 200 => Some(FaultKind::Skew {
                worker,
                skew_ms: skew_ms / 2,
            }),
            FaultKind::SlowRuns { run_ms } if run_ms >= 2_000 => {
                Some(FaultKind::SlowRuns { run_ms: run_ms / 2 })
            }
            FaultKind::SlowRemote { delay_ms } if delay_ms >= 400 => Some(FaultKind::SlowRemote {
                delay_ms: delay_ms / 2,
            }),
            FaultKind::PauseAfterAnswer {
                worker,
                pause_ms,
                clock_back_ms,
            } if clock_back_ms > 0 => Some(FaultKind::PauseAfterAnswer {
                worker,
                pause_ms,
                clock_back_ms: 0,
            }),
            FaultKind::LoseReplies { .. }
            | FaultKind::LostCreateAcks { .. }
            | FaultKind::Latency { .. }
            | FaultKind::Skew { .. }
            | FaultKind::SlowRuns { .. }
            | FaultKind::StuckRuns
            | FaultKind::DoomedVersion { .. }
            | FaultKind::SlowRemote { .. }
            | FaultKind::Crash { .. }
            | FaultKind::GracefulStop { .. }
            | FaultKind::RemoteRestart
            | FaultKind::Pause { .. }
            | FaultKind::PauseAfterAnswer { .. }
            | FaultKind::StepAtNews { .. }
            | FaultKind::Partition { .. }
            | FaultKind::Hold { .. }
            | FaultKind::GatewayBusy
            | FaultKind::GatewayErrors { .. }
            | FaultKind::LookupErrors
            | FaultKind::LostRuns
            | FaultKind::BadRuns { .. }
            | FaultKind::RefuseInserts
            | FaultKind::StubbornRuns { .. }
            | FaultKind::StoreDown
            | FaultKind::RemoteDown { .. }
            | FaultKind::RemoteErrors => None,
        }
    }

    /// Checks the fault's parameters against a plan of `workers` workers with `lanes` lanes
    /// each; an error names the field (below `kind`) and the problem.
    pub fn check(&self, workers: u32, lanes: u32) -> Result<(), (&'static str, &'static str)> {
        if self.target().worker().is_some_and(|w| w >= workers) {
            return Err(("worker", "no such worker"));
        }
        match *self {
            FaultKind::Pause { lane, .. } if lane >= lanes => Err(("lane", "no such lane")),
            FaultKind::LoseReplies { one_in: 0, .. } | FaultKind::LostCreateAcks { one_in: 0 } => {
                Err(("one_in", "must be at least 1"))
            }
            FaultKind::Pause { .. }
            | FaultKind::PauseAfterAnswer { .. }
            | FaultKind::StepAtNews { .. }
            | FaultKind::LoseReplies { .. }
            | FaultKind::LostCreateAcks { .. }
            | FaultKind::Crash { .. }
            | FaultKind::GracefulStop { .. }
            | FaultKind::RemoteRestart
            | FaultKind::Partition { .. }
            | FaultKind::Hold { .. }
            | FaultKind::Latency { .. }
            | FaultKind::Skew { .. }
            | FaultKind::GatewayBusy
            | FaultKind::GatewayErrors { .. }
            | FaultKind::LookupErrors
            | FaultKind::LostRuns
            | FaultKind::SlowRuns { .. }
            | FaultKind::StuckRuns
            | FaultKind::DoomedVersion { .. }
            | FaultKind::BadRuns { .. }
            | FaultKind::RemoteErrors
            | FaultKind::RemoteDown { .. }
            | FaultKind::RefuseInserts
            | FaultKind::StubbornRuns { .. }
            | FaultKind::StoreDown
            | FaultKind::SlowRemote { .. } => Ok(()),
        }
    }
}

/// Serde's test for a field left out when 0.
fn is_zero(ms: &u64) -> bool {
    *ms == 0
}

// Which faults excuse lateness (DOMAIN §9's bounded delays).

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

impl FaultKind {
    /// How long past its window the fault may still hold a worker back: a lane's stall after an
    /// answer and a clock stepped back stay after the window closes (the clock until 20 s after
    /// the stall; a stepped-back clock sees due times that much later). 0 for the others.
    pub fn lingers_ms(&self) -> u64 {
        const CLOCK_STAYS_BACK_MS: u64 = 20_000;
        match *self {
            FaultKind::PauseAfterAnswer {
                pause_ms,
                clock_back_ms,
                ..
            } => pause_ms + CLOCK_STAYS_BACK_MS + clock_back_ms,
            FaultKind::StepAtNews { back_ms, .. } => CLOCK_STAYS_BACK_MS + back_ms,
            _ => 0,
        }
    }

    /// Which faults excuse lateness: what a fault of this kind can hold back (see [`Excuse`]),
    /// the one answer the checker's lateness rules ask. No catch-all arm: a new kind does not
    /// compile until its author decides.
    pub fn excuse(&self) -> Excuse {
        let (polls, launches, freezes) = match *self {
            FaultKind::Crash { .. }
            | FaultKind::GracefulStop { .. }
            | FaultKind::Skew { .. }
            | FaultKind::StepAtNews { .. }
            | FaultKind::Latency { .. }
            | FaultKind::StoreDown => (true, Launches::All, Freezes::None),
            FaultKind::Pause { worker, lane } => {
                (true, Launches::All, Freezes::Lane { worker, lane })
            }
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
            // Like lost gateway replies: the launch is retried after the unavailability backoff.
            FaultKind::LostCreateAcks { .. } => (false, Launches::All, Freezes::None),
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
}

impl FaultKind {
    /// Whether a fault of this kind can leave a run a launch created unconfirmed: its sender
    /// never looks again (a lost or late answer, a 5xx after the insert), or looks only after a
    /// short run has ended (a lane stalled at the create's return, a slow network between the
    /// create and the second look) — so a second run of a key stays. (A crash or a stop strikes
    /// that instant too seldom to count; a pause after an answer never strikes a launch.) A stale listing (a lost-create-acks
    /// fault) next to one of these makes a duplicate no look can prevent, so that fault takes
    /// effect only away from them. No catch-all arm.
    pub fn leaves_create_unconfirmed(&self) -> bool {
        match *self {
            FaultKind::LoseReplies { service, .. }
            | FaultKind::Partition { service, .. }
            | FaultKind::Hold { service, .. } => service == Service::Gateway,
            FaultKind::GatewayErrors { .. }
            | FaultKind::Latency { .. }
            | FaultKind::Pause { .. } => true,
            FaultKind::Crash { .. }
            | FaultKind::GracefulStop { .. }
            | FaultKind::PauseAfterAnswer { .. }
            | FaultKind::RemoteRestart
            | FaultKind::StepAtNews { .. }
            | FaultKind::Skew { .. }
            | FaultKind::GatewayBusy
            | FaultKind::LookupErrors
            | FaultKind::LostRuns
            | FaultKind::SlowRuns { .. }
            | FaultKind::StuckRuns
            | FaultKind::RefuseInserts
            | FaultKind::StubbornRuns { .. }
            | FaultKind::StoreDown
            | FaultKind::DoomedVersion { .. }
            | FaultKind::BadRuns { .. }
            | FaultKind::RemoteErrors
            | FaultKind::RemoteDown { .. }
            | FaultKind::SlowRemote { .. }
            | FaultKind::LostCreateAcks { .. } => false,
        }
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

    /// One fault of every kind.
    fn every_kind() -> Vec<FaultKind> {
        vec![
            FaultKind::Crash { worker: 1 },
            FaultKind::GracefulStop { worker: 1 },
            FaultKind::RemoteRestart,
            FaultKind::Pause { worker: 1, lane: 0 },
            FaultKind::PauseAfterAnswer {
                worker: 1,
                pause_ms: 16_000,
                clock_back_ms: 20_000,
            },
            FaultKind::StepAtNews {
                worker: 1,
                back_ms: 20_000,
            },
            FaultKind::Partition {
                worker: 1,
                service: Service::Db,
            },
            FaultKind::Hold {
                worker: 1,
                service: Service::Mcp,
            },
            FaultKind::LoseReplies {
                service: Service::Gateway,
                one_in: 3,
            },
            FaultKind::Latency { max_ms: 500 },
            FaultKind::Skew {
                worker: 1,
                skew_ms: -800,
            },
            FaultKind::GatewayBusy,
            FaultKind::GatewayErrors { after_commit: true },
            FaultKind::LookupErrors,
            FaultKind::LostRuns,
            FaultKind::SlowRuns { run_ms: 9_000 },
            FaultKind::StuckRuns,
            FaultKind::DoomedVersion {
                task: 0,
                run_ms: 9_000,
            },
            FaultKind::BadRuns {
                end: BadEnd::Timeout,
            },
            FaultKind::RemoteErrors,
            FaultKind::RemoteDown { task: 0 },
            FaultKind::RefuseInserts,
            FaultKind::StubbornRuns { run_ms: 40_000 },
            FaultKind::StoreDown,
            FaultKind::SlowRemote { delay_ms: 2_000 },
            FaultKind::LostCreateAcks { one_in: 2 },
        ]
    }

    #[test]
    fn every_kind_names_its_hosts_and_its_worker_comes_first() {
        for kind in every_kind() {
            let target = kind.target();
            match (target.hosts(), target.worker()) {
                (None, worker) => {
                    assert_eq!(target, Target::Network, "{kind:?}");
                    assert_eq!(worker, None);
                }
                (Some(hosts), Some(w)) => assert_eq!(hosts[0], worker_host(w), "{kind:?}"),
                (Some(hosts), None) => assert_eq!(hosts.len(), 1, "{kind:?}"),
            }
            assert!(kind.look().band.starts_with('f'), "{kind:?}");
            assert!(!kind.detail().is_empty(), "{kind:?}");
        }
        let link = FaultKind::Hold {
            worker: 2,
            service: Service::Gateway,
        };
        assert_eq!(
            link.target().hosts(),
            Some(vec!["worker-2".to_owned(), "gateway".to_owned()])
        );
    }

    #[test]
    fn a_check_names_the_field_at_fault() {
        assert_eq!(
            FaultKind::Crash { worker: 2 }.check(2, 2),
            Err(("worker", "no such worker"))
        );
        assert_eq!(
            FaultKind::Pause { worker: 0, lane: 2 }.check(1, 2),
            Err(("lane", "no such lane"))
        );
        let never = FaultKind::LoseReplies {
            service: Service::Db,
            one_in: 0,
        };
        assert_eq!(never.check(1, 1), Err(("one_in", "must be at least 1")));
        let never = FaultKind::LostCreateAcks { one_in: 0 };
        assert_eq!(never.check(1, 1), Err(("one_in", "must be at least 1")));
        for kind in every_kind() {
            assert_eq!(kind.check(2, 1), Ok(()), "{kind:?}");
        }
    }

    #[test]
    fn milder_faults_are_gentler_and_bottom_out() {
        let rare = FaultKind::LoseReplies {
            service: Service::Db,
            one_in: 64,
        };
        assert_eq!(rare.milder(), None);
        let skew = FaultKind::Skew {
            worker: 0,
            skew_ms: -800,
        };
        assert_eq!(
            skew.milder(),
            Some(FaultKind::Skew {
                worker: 0,
                skew_ms: -400
            })
        );
        assert_eq!(FaultKind::Crash { worker: 0 }.milder(), None);
    }

    #[test]
    fn remote_faults_never_excuse_a_late_launch_and_gateway_faults_never_a_late_poll() {
        let remote = [
            FaultKind::RemoteErrors,
            FaultKind::RemoteRestart,
            FaultKind::SlowRemote { delay_ms: 1 },
        ];
        assert!(remote.iter().all(|k| k.excuse().launches == Launches::None));
        let gateway = [
            FaultKind::GatewayBusy,
            FaultKind::LostRuns,
            FaultKind::StuckRuns,
        ];
        assert!(gateway.iter().all(|k| !k.excuse().polls));
    }

    #[test]
    fn a_doomed_version_holds_back_only_its_own_task() {
        let doomed = FaultKind::DoomedVersion { task: 3, run_ms: 1 }
            .excuse()
            .launches;
        assert!(doomed.hold(3));
        assert!(!doomed.hold(4));
    }
}
