//! The remote-server double: tasks that move through scripted statuses over (virtual) time —
//! some ask for input, all end terminal — with occasional transient errors, and a record of
//! every state it served.
//!
//! Every text a task shows carries a **state token** `st-{n}.{attempt}-{stage}` naming the task
//! and the stage it was in, so a run's prompt can be traced back to the states the driver really
//! served (the checker's "unexpected" and "lost").

use crate::clock::ScaledClock;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tasklatch_core::ids::ServerId;
use tasklatch_core::ports::{Clock, Driver, DriverError, SubmitRequest, Submitted};
use tasklatch_core::secret::{RemoteHandle, Secret};
use tasklatch_core::snapshot::RemoteReport;
use tasklatch_core::task::ErrorClass;
use tasklatch_core::time::Timestamp;

/// The stage index of a task cancelled before it finished.
pub const CANCELLED_STAGE: u32 = 99;

/// A task's identity in the driver: the submitter's task number and submit attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RemoteKey {
    /// Task number.
    pub n: u32,
    /// Submit attempt (a failed submit is retried as a new remote task).
    pub attempt: u32,
}

impl RemoteKey {
    /// The state token of `stage`.
    pub fn token(self, stage: u32) -> String {
        format!("st-{}.{}-{}", self.n, self.attempt, stage)
    }

    /// The submit input that names this key.
    pub fn input(self) -> String {
        format!("n={} attempt={}", self.n, self.attempt)
    }

    fn parse_input(input: &str) -> Option<RemoteKey> {
        let mut n = None;
        let mut attempt = None;
        for part in input.split_whitespace() {
            if let Some(v) = part.strip_prefix("n=") {
                n = v.parse().ok();
            } else if let Some(v) = part.strip_prefix("attempt=") {
                attempt = v.parse().ok();
            }
        }
        Some(RemoteKey {
            n: n?,
            attempt: attempt?,
        })
    }
}

/// Every state token in `text`, as (key, stage).
pub fn tokens(text: &str) -> Vec<(RemoteKey, u32)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("st-") {
        rest = &rest[i + 3..];
        let num = |s: &str| -> Option<(u32, usize)> {
            let len = s.bytes().take_while(u8::is_ascii_digit).count();
            Some((s[..len].parse().ok()?, len))
        };
        let Some((n, a)) = num(rest) else { continue };
        let after = &rest[a..];
        let Some(after) = after.strip_prefix('.') else {
            continue;
        };
        let Some((attempt, b)) = num(after) else {
            continue;
        };
        let Some(after) = after[b..].strip_prefix('-') else {
            continue;
        };
        let Some((stage, _)) = num(after) else {
            continue;
        };
        out.push((RemoteKey { n, attempt }, stage));
    }
    out
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Working(Duration),
    InputRequired(Duration),
    Completed,
    Failed,
}

struct RemoteTask {
    key: RemoteKey,
    stages: Vec<Stage>,
    submitted_at: Timestamp,
    cancelled: bool,
    served: BTreeMap<u32, Timestamp>,
}

impl RemoteTask {
    /// The stage at `now` and whether it is terminal.
    fn stage_at(&self, now: Timestamp) -> (u32, Stage) {
        let mut t = self.submitted_at;
        for (i, s) in self.stages.iter().enumerate() {
            let stay = match s {
                Stage::Working(d) | Stage::InputRequired(d) => *d,
                Stage::Completed | Stage::Failed => return (i as u32, *s),
            };
            t = t.plus(stay);
            if now < t {
                return (i as u32, *s);
            }
        }
        (self.stages.len() as u32, Stage::Completed)
    }

    fn final_stage(&self) -> u32 {
        if self.cancelled {
            CANCELLED_STAGE
        } else {
            self.stages.len().saturating_sub(1) as u32
        }
    }

    fn report(&mut self, now: Timestamp, remote_id: &str) -> RemoteReport {
        let (idx, stage) = if self.cancelled {
            (CANCELLED_STAGE, Stage::Failed)
        } else {
            self.stage_at(now)
        };
        self.served.entry(idx).or_insert(now);
        let token = self.key.token(idx);
        let mut r = RemoteReport {
            task_id: remote_id.to_owned(),
            ..Default::default()
        };
        if self.cancelled {
            r.status = "cancelled".into();
            r.error = Some(format!("cancelled by request {token}"));
            return r;
        }
        match stage {
            Stage::Working(_) => r.status = "working".into(),
            Stage::InputRequired(_) => {
                r.status = "input_required".into();
                r.input_request = Some(format!("which option for {token}?"));
            }
            Stage::Completed => {
                r.status = "completed".into();
                r.result = Some(format!("{{\"done\":\"{token}\"}}"));
            }
            Stage::Failed => {
                r.status = "failed".into();
                r.error = Some(format!("remote failure {token}"));
            }
        }
        r
    }

    fn terminal_at(&self, now: Timestamp) -> bool {
        self.cancelled || matches!(self.stage_at(now).1, Stage::Completed | Stage::Failed)
    }
}

/// What the driver recorded about one remote task.
#[derive(Clone, Debug)]
pub struct RemoteRecord {
    /// The task.
    pub key: RemoteKey,
    /// Stages served to the engine (by a status poll, a cancel or an error), with the virtual
    /// time each was first served.
    pub served: BTreeMap<u32, Timestamp>,
    /// The final (terminal) stage: the script's last one, or [`CANCELLED_STAGE`].
    pub final_stage: u32,
    /// Whether the task is terminal now.
    pub terminal: bool,
}

struct World {
    tasks: HashMap<String, RemoteTask>,
    rng: ChaCha8Rng,
}

/// The in-process remote server. Cheap to clone (shared state).
#[derive(Clone)]
pub struct DriverDouble {
    world: Arc<Mutex<World>>,
    clock: ScaledClock,
    error_rate: f64,
    seed: u64,
}

impl DriverDouble {
    /// A server whose scripts and faults come from `seed`; `error_rate` of status polls and
    /// remote cancels fail transiently.
    pub fn new(clock: ScaledClock, seed: u64, error_rate: f64) -> Self {
        DriverDouble {
            world: Arc::new(Mutex::new(World {
                tasks: HashMap::new(),
                rng: ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_d1e7),
            })),
            clock,
            error_rate,
            seed,
        }
    }

    fn world(&self) -> MutexGuard<'_, World> {
        self.world.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn script(&self, key: RemoteKey) -> Vec<Stage> {
        let mut rng = ChaCha8Rng::seed_from_u64(
            self.seed ^ (u64::from(key.n) << 20) ^ u64::from(key.attempt),
        );
        let mut stages = Vec::new();
        for i in 0..rng.random_range(1..=3) {
            if i > 0 && rng.random_bool(0.15) {
                stages.push(Stage::InputRequired(Duration::from_secs(
                    rng.random_range(61..=90),
                )));
            } else {
                stages.push(Stage::Working(Duration::from_secs(
                    rng.random_range(2..=20),
                )));
            }
        }
        stages.push(if rng.random_bool(0.85) {
            Stage::Completed
        } else {
            Stage::Failed
        });
        stages
    }

    /// Every remote task's record.
    pub fn records(&self) -> Vec<RemoteRecord> {
        let now = self.clock.now();
        let w = self.world();
        let mut out: Vec<RemoteRecord> = w
            .tasks
            .values()
            .map(|t| RemoteRecord {
                key: t.key,
                served: t.served.clone(),
                final_stage: t.final_stage(),
                terminal: t.terminal_at(now),
            })
            .collect();
        out.sort_by_key(|r| r.key);
        out
    }

    /// How many remote tasks exist and how many are terminal now.
    pub fn counts(&self) -> (usize, usize) {
        let now = self.clock.now();
        let w = self.world();
        let terminal = w.tasks.values().filter(|t| t.terminal_at(now)).count();
        (w.tasks.len(), terminal)
    }

    fn transient(&self, w: &mut World) -> bool {
        self.error_rate > 0.0 && w.rng.random_bool(self.error_rate)
    }
}

fn remote_id(key: RemoteKey) -> String {
    format!("r{}.{}", key.n, key.attempt)
}

impl Driver for DriverDouble {
    async fn submit(&self, req: &SubmitRequest) -> Result<Submitted, DriverError> {
        let key = RemoteKey::parse_input(&req.arguments)
            .ok_or_else(|| DriverError::Rejected("input must name n= and attempt=".into()))?;
        let id = remote_id(key);
        let now = self.clock.now();
        let stages = self.script(key);
        let mut w = self.world();
        let first = w.rng.random_bool(0.5);
        let task = w.tasks.entry(id.clone()).or_insert(RemoteTask {
            key,
            stages,
            submitted_at: now,
            cancelled: false,
            served: BTreeMap::new(),
        });
        let report = first.then(|| task.report(now, &id));
        Ok(Submitted {
            handle: RemoteHandle {
                remote_task_id: Secret::new(id),
                driver_data: Secret::new(format!("drv-secret-{}", key.n)),
            },
            report,
        })
    }

    async fn get_status(
        &self,
        _server: &ServerId,
        handle: &RemoteHandle,
    ) -> Result<RemoteReport, DriverError> {
        let now = self.clock.now();
        let mut w = self.world();
        let fail = self.transient(&mut w);
        let id = handle.remote_task_id.expose();
        let Some(task) = w.tasks.get_mut(id) else {
            return Err(DriverError::UnknownTask);
        };
        if fail {
            let (idx, _) = task.stage_at(now);
            let idx = if task.cancelled { CANCELLED_STAGE } else { idx };
            task.served.entry(idx).or_insert(now);
            return Err(DriverError::Unavailable {
                class: ErrorClass::Timeout,
                message: format!("transient timeout {}", task.key.token(idx)),
            });
        }
        Ok(task.report(now, id))
    }

    async fn cancel(
        &self,
        _server: &ServerId,
        handle: &RemoteHandle,
    ) -> Result<RemoteReport, DriverError> {
        let now = self.clock.now();
        let mut w = self.world();
        let fail = self.transient(&mut w);
        let id = handle.remote_task_id.expose();
        let Some(task) = w.tasks.get_mut(id) else {
            return Err(DriverError::UnknownTask);
        };
        if fail {
            return Err(DriverError::Unavailable {
                class: ErrorClass::Connection,
                message: "transient cancel failure".into(),
            });
        }
        if !task.terminal_at(now) {
            task.cancelled = true;
        }
        Ok(task.report(now, id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_found_in_text() {
        let k = RemoteKey { n: 17, attempt: 0 };
        let text = format!("x {} y st-3.1-99 st-bad st-1.x-2", k.token(2));
        assert_eq!(
            tokens(&text),
            vec![(k, 2), (RemoteKey { n: 3, attempt: 1 }, 99)]
        );
        assert_eq!(
            RemoteKey::parse_input(&k.input()),
            Some(RemoteKey { n: 17, attempt: 0 })
        );
    }

    #[test]
    fn statuses_come_from_the_script() {
        let clock = ScaledClock::new(Timestamp::from_micros(0), 1);
        let d = DriverDouble::new(clock, 7, 0.0);
        let key = RemoteKey { n: 1, attempt: 0 };
        let stages = d.script(key);
        assert!(matches!(
            stages.last(),
            Some(Stage::Completed | Stage::Failed)
        ));
        assert_eq!(stages, d.script(key), "scripts are seeded");
    }
}
