//! Who calls through the ports — a worker lane or the user host — and the plan's faults that
//! strike a lane when a call returns: pauses, and clock steps back.

use crate::plan::fault::FaultKind;
use crate::plan::WorkloadMark;
use crate::run::ctx::{now_ms, Ctx};
use std::sync::Arc;
use std::time::Duration;

/// Who is calling: a worker lane or the user host.
#[derive(Clone)]
pub struct Caller {
    /// `worker-{w}/{lane}` or `user`.
    pub name: String,
    /// The run's shared context.
    pub ctx: Arc<Ctx>,
    /// Worker and lane, for worker callers.
    pub lane: Option<(u32, u32)>,
}

/// How long a clock stepped back during a pause-after-answer stays back once the pause ends.
const CLOCK_STEP_OUTLASTS_PAUSE_MS: u64 = 20_000;

/// How long a clock stepped back as a poll brought news stays back.
const CLOCK_STEP_AT_NEWS_MS: u64 = 20_000;

impl Caller {
    /// The host part of the caller's name.
    pub fn host(&self) -> String {
        self.name.split('/').next().unwrap_or(&self.name).to_owned()
    }

    /// Stalls the lane if a pause of the plan is due now (each pause happens once). Called when
    /// a remote or launcher call returns — the lane then holds a lease, and a pause there is the
    /// classic stale-writer hazard that fencing tokens must stop.
    pub(super) async fn after_call(&self) {
        let Some((worker, lane)) = self.lane else {
            return;
        };
        let t = now_ms();
        let due: Vec<(usize, u64)> = self
            .ctx
            .active(t, |k| match k {
                FaultKind::Pause { worker: w, lane: l } if *w == worker && *l == lane => Some(()),
                _ => None,
            })
            .map(|(i, ())| (i, self.ctx.faults()[i].for_ms))
            .collect();
        for (index, for_ms) in due {
            if self.ctx.fire(index, &self.host()) {
                tokio::time::sleep(Duration::from_millis(for_ms)).await;
            }
        }
    }

    /// Steps the worker's wall clock back if a step-at-news fault of its worker is due now
    /// (each happens once) and the status call just answered brought `news` (a task no longer
    /// `working`): the poll's write, and the notification it hands off, are then stamped by the
    /// stepped clock, which the notification pass's clock check must catch.
    pub(super) fn after_status(&self, news: bool) {
        let (Some((worker, _)), true) = (self.lane, news) else {
            return;
        };
        let t = now_ms();
        let due: Vec<(usize, u64)> = self
            .ctx
            .active(t, |k| match k {
                FaultKind::StepAtNews { worker: w, back_ms } if *w == worker => Some(*back_ms),
                _ => None,
            })
            .collect();
        for (index, back_ms) in due {
            if self.ctx.fire(index, &self.host()) {
                self.ctx
                    .step_clock_back(worker, t, t + CLOCK_STEP_AT_NEWS_MS, back_ms);
                self.ctx
                    .exercised(WorkloadMark::WorkerClockSteppedAtNews, &self.host(), None);
            }
        }
    }

    /// Stalls the lane if a pause-after-answer fault of its worker is due now (each happens
    /// once), stepping the worker's clock back first if the fault says so. Called when the
    /// remote server took a user's answer, before the engine sees it.
    pub(super) async fn after_answer(&self) {
        let Some((worker, _)) = self.lane else {
            return;
        };
        let t = now_ms();
        let due: Vec<(usize, u64, u64)> = self
            .ctx
            .active(t, |k| match k {
                FaultKind::PauseAfterAnswer {
                    worker: w,
                    pause_ms,
                    clock_back_ms,
                } if *w == worker => Some((*pause_ms, *clock_back_ms)),
                _ => None,
            })
            .map(|(i, (pause_ms, back_ms))| (i, pause_ms, back_ms))
            .collect();
        for (index, pause_ms, back_ms) in due {
            if self.ctx.fire(index, &self.host()) {
                if back_ms > 0 {
                    let until_ms = t + pause_ms + CLOCK_STEP_OUTLASTS_PAUSE_MS;
                    self.ctx.step_clock_back(worker, t, until_ms, back_ms);
                    self.ctx
                        .exercised(WorkloadMark::WorkerClockSteppedBack, &self.host(), None);
                }
                tokio::time::sleep(Duration::from_millis(pause_ms)).await;
            }
        }
    }
}
