//! Request coalescing ("flat combining") for the run ledger: concurrent calls are gathered and
//! executed as one batch — one statement, one transaction, one durable commit — instead of one
//! each.
//!
//! There is no background task and no timer. A caller queues its request and then competes for
//! one of a fixed number of *leader* permits; whoever gets one takes everything queued (at most
//! the batch bound, oldest first), starts the batch and hands every result back through the
//! waiting callers' one-shot channels. Callers that find their request already taken simply
//! wait for their answer. While a batch is in flight new requests queue up, so the batch size
//! follows the load: one request alone is a batch of one, a burst is one batch.
//!
//! The contract:
//! - **Order**: a batch holds requests in the order they were queued, and the batch function
//!   must answer them as if they were executed one after another in that order. Batches that
//!   run at the same time (up to the number of leaders) are independent transactions: their
//!   relative order is whatever the database makes of it, as for concurrent single calls.
//! - **Failure**: a batch succeeds or fails as a whole. If it could not run (connection lost,
//!   pool exhausted, a malformed answer: [`BatchError::Unavailable`]), every request in it gets
//!   that error. For a launch that is a "maybe launched" outcome, exactly as a single call that
//!   lost its connection: the caller retries under the same idempotency key and gets the same
//!   run. If the database refused the batch's statement ([`BatchError::Refused`]), one request
//!   may be poisoned: the batch is split in halves, each run as a batch of its own (first half
//!   first), down to single requests, so only a request refused alone gets the error and the
//!   others are answered. One poisoned request among `n` costs about `2·log2(n)` extra
//!   transactions; a refused batch committed nothing, so running its halves is safe.
//! - **Crash mid-batch**: the batch is one transaction. If the process or the connection dies
//!   before the commit, nothing of the batch happened; after it, all of it did. Nothing is kept
//!   in memory that a restart would need.
//! - **Cancellation**: a caller that gives up while its request is still queued withdraws it
//!   (it is skipped, never executed). Once a batch has taken a request, it runs to its end in a
//!   task of its own, whoever started it: aborting a leader does not abort its batch, so one
//!   caller's cancellation never fails another caller's request.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use tasklatch_core::ledger::LedgerError;
use tokio::sync::{oneshot, Semaphore};

/// Why a batch failed.
#[derive(Debug)]
pub(crate) enum BatchError {
    /// The batch could not run or its answer is unusable: every request in it gets the error.
    Unavailable(LedgerError),
    /// The database refused the batch's statement (nothing committed): split and run again.
    Refused(LedgerError),
}

/// A queued request and where its answer goes.
struct Waiter<Req, Resp> {
    req: Req,
    reply: oneshot::Sender<Result<Resp, LedgerError>>,
}

/// Gathers concurrent requests into batches (see the module documentation).
pub(crate) struct Coalescer<Req, Resp> {
    queue: Mutex<VecDeque<Waiter<Req, Resp>>>,
    leaders: Arc<Semaphore>,
    max_batch: usize,
}

impl<Req: Clone + Send + 'static, Resp: Send + 'static> Coalescer<Req, Resp> {
    /// At most `leaders` batches in flight at once, each of at most `max_batch` requests (both
    /// at least 1).
    pub(crate) fn new(max_batch: usize, leaders: usize) -> Self {
        Coalescer {
            queue: Mutex::new(VecDeque::new()),
            leaders: Arc::new(Semaphore::new(leaders.max(1))),
            max_batch: max_batch.max(1),
        }
    }

    fn queue(&self) -> MutexGuard<'_, VecDeque<Waiter<Req, Resp>>> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Up to `max_batch` queued requests whose callers still wait, oldest first.
    fn take(&self) -> Vec<Waiter<Req, Resp>> {
        let mut queue = self.queue();
        let mut batch = Vec::with_capacity(self.max_batch.min(queue.len()));
        while batch.len() < self.max_batch {
            let Some(w) = queue.pop_front() else { break };
            if !w.reply.is_closed() {
                batch.push(w);
            }
        }
        batch
    }

    /// Answers `req`, executed in a batch by `run`: given the batch's requests in order, `run`
    /// returns one answer per request, in the same order, or one error for all of them (a
    /// refused batch is split, see the module documentation).
    pub(crate) async fn call<F, Fut>(&self, req: Req, run: F) -> Result<Resp, LedgerError>
    where
        F: Fn(Vec<Req>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<Resp>, BatchError>> + Send + 'static,
    {
        let run = Arc::new(run);
        let (reply, mut answer) = oneshot::channel();
        self.queue().push_back(Waiter { req, reply });
        loop {
            let permit = tokio::select! {
                biased;
                a = &mut answer => return answered(a),
                p = self.leaders.clone().acquire_owned() => p,
            };
            let Ok(permit) = permit else {
                return Err(LedgerError("request coalescer closed".into()));
            };
            let batch = self.take();
            if batch.is_empty() {
                // Our request is not queued (a leader took it, and the queue only ever gives
                // requests to a batch), so its batch is in flight and will answer.
                drop(permit);
                return answered(answer.await);
            }
            let (reqs, replies): (Vec<Req>, Vec<_>) =
                batch.into_iter().map(|w| (w.req, w.reply)).unzip();
            debug_assert!(reqs.len() <= self.max_batch);
            let size = reqs.len();
            tracing::debug!(size, "coalesced batch");
            let run = run.clone();
            tokio::spawn(async move {
                let answers = run_splitting(run.as_ref(), reqs).await;
                drop(permit);
                debug_assert_eq!(answers.len(), size);
                for (reply, a) in replies.into_iter().zip(answers) {
                    // A caller that went away meanwhile needs no answer.
                    let _ = reply.send(a);
                }
            });
        }
    }
}

/// Runs `reqs` as one batch with `run` and answers each request, in order. A refused batch of
/// more than one request is split in halves, each run as a batch of its own, the first half
/// first (the order contract holds: a refused batch committed nothing).
async fn run_splitting<Req, Resp, F, Fut>(run: &F, reqs: Vec<Req>) -> Vec<Result<Resp, LedgerError>>
where
    Req: Clone,
    F: Fn(Vec<Req>) -> Fut,
    Fut: Future<Output = Result<Vec<Resp>, BatchError>>,
{
    let mut answers = Vec::with_capacity(reqs.len());
    // Batches still to run, the next one last.
    let mut pending = vec![reqs];
    while let Some(batch) = pending.pop() {
        let size = batch.len();
        let failed = match run(batch.clone()).await {
            Ok(a) if a.len() == size => {
                answers.extend(a.into_iter().map(Ok));
                continue;
            }
            Ok(a) => LedgerError(format!("batch of {size} answered {} times", a.len())),
            Err(BatchError::Refused(e)) if size > 1 => {
                tracing::debug!(size, error = %e, "coalesced batch refused; running its halves");
                let mut first = batch;
                let second = first.split_off(size / 2);
                pending.push(second);
                pending.push(first);
                continue;
            }
            Err(BatchError::Refused(e) | BatchError::Unavailable(e)) => e,
        };
        tracing::debug!(size, error = %failed, "coalesced batch failed");
        answers.extend((0..size).map(|_| Err(failed.clone())));
    }
    answers
}

/// The answer, or an error if the batch's task ended without one (it panicked, or the runtime
/// shut down under it).
fn answered<Resp>(
    a: Result<Result<Resp, LedgerError>, oneshot::error::RecvError>,
) -> Result<Resp, LedgerError> {
    a.unwrap_or_else(|_| {
        Err(LedgerError(
            "coalesced batch ended without an answer".into(),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    type Batch = std::pin::Pin<Box<dyn Future<Output = Result<Vec<u32>, BatchError>> + Send>>;

    /// Doubles each request, unless `fails` gives the batch's error; records the size of every
    /// batch.
    fn batches(
        sizes: Arc<Mutex<Vec<usize>>>,
        fails: fn(&[u32]) -> Option<BatchError>,
    ) -> impl Fn(Vec<u32>) -> Batch {
        move |reqs: Vec<u32>| {
            let sizes = sizes.clone();
            Box::pin(async move {
                sizes.lock().unwrap().push(reqs.len());
                tokio::time::sleep(Duration::from_millis(20)).await;
                match fails(&reqs) {
                    Some(e) => Err(e),
                    None => Ok(reqs.into_iter().map(|r| r * 2).collect()),
                }
            })
        }
    }

    fn doubler(sizes: Arc<Mutex<Vec<usize>>>) -> impl Fn(Vec<u32>) -> Batch {
        batches(sizes, |_| None)
    }

    /// Every batch is unavailable.
    fn unavailable(sizes: Arc<Mutex<Vec<usize>>>) -> impl Fn(Vec<u32>) -> Batch {
        batches(sizes, |_| {
            Some(BatchError::Unavailable(LedgerError("boom".into())))
        })
    }

    /// The database refuses every batch holding request 7.
    fn refusing_7(sizes: Arc<Mutex<Vec<usize>>>) -> impl Fn(Vec<u32>) -> Batch {
        batches(sizes, |reqs| {
            reqs.contains(&7)
                .then(|| BatchError::Refused(LedgerError("refused".into())))
        })
    }

    #[tokio::test]
    async fn concurrent_calls_share_batches_bounded_in_size_and_keep_their_answers() {
        let c = Arc::new(Coalescer::new(8, 1));
        let sizes = Arc::new(Mutex::new(Vec::new()));
        let calls: Vec<_> = (0..40u32)
            .map(|i| {
                let (c, sizes) = (c.clone(), sizes.clone());
                tokio::spawn(async move { c.call(i, doubler(sizes)).await })
            })
            .collect();
        for (i, h) in calls.into_iter().enumerate() {
            assert_eq!(h.await.unwrap(), Ok(2 * i as u32));
        }
        let sizes = sizes.lock().unwrap().clone();
        assert_eq!(sizes.iter().sum::<usize>(), 40);
        assert!(sizes.iter().all(|&s| s <= 8), "{sizes:?}");
        assert!(sizes.len() < 40, "calls were coalesced: {sizes:?}");
    }

    #[tokio::test]
    async fn a_failed_batch_fails_every_request_in_it() {
        let c = Arc::new(Coalescer::new(256, 1));
        let sizes = Arc::new(Mutex::new(Vec::new()));
        let calls: Vec<_> = (0..10u32)
            .map(|i| {
                let (c, sizes) = (c.clone(), sizes.clone());
                tokio::spawn(async move { c.call(i, unavailable(sizes)).await })
            })
            .collect();
        for h in calls {
            assert_eq!(h.await.unwrap(), Err(LedgerError("boom".into())));
        }
    }

    #[tokio::test]
    async fn a_refused_batch_is_split_until_only_the_poisoned_request_fails() {
        let c = Arc::new(Coalescer::new(256, 1));
        let sizes = Arc::new(Mutex::new(Vec::new()));
        // A first call holds the only leader permit, so the next 16 queue into one batch.
        let first = {
            let (c, sizes) = (c.clone(), sizes.clone());
            tokio::spawn(async move { c.call(100, refusing_7(sizes)).await })
        };
        tokio::time::sleep(Duration::from_millis(5)).await;
        let calls: Vec<_> = (0..16u32)
            .map(|i| {
                let (c, sizes) = (c.clone(), sizes.clone());
                tokio::spawn(async move { c.call(i, refusing_7(sizes)).await })
            })
            .collect();
        assert_eq!(first.await.unwrap(), Ok(200));
        for (i, h) in calls.into_iter().enumerate() {
            let want = if i == 7 {
                Err(LedgerError("refused".into()))
            } else {
                Ok(2 * i as u32)
            };
            assert_eq!(h.await.unwrap(), want, "request {i}");
        }
        let sizes = sizes.lock().unwrap().clone();
        // The first call alone; then, first halves first: 16 refused, 8 refused, 4, 4 refused,
        // 2, 2 refused, 1, 1 refused (request 7 alone), and the second 8.
        assert_eq!(sizes, [1, 16, 8, 4, 4, 2, 2, 1, 1, 8], "{sizes:?}");
    }

    #[tokio::test]
    async fn a_short_answer_fails_the_batch() {
        let c = Coalescer::new(4, 1);
        let r = c
            .call(1u32, |_reqs: Vec<u32>| async { Ok(Vec::<u32>::new()) })
            .await;
        assert_eq!(r, Err(LedgerError("batch of 1 answered 0 times".into())));
    }

    #[tokio::test]
    async fn an_aborted_leader_does_not_abort_its_batch_and_withdrawn_requests_never_run() {
        let c = Arc::new(Coalescer::new(256, 1));
        let ran = Arc::new(AtomicUsize::new(0));
        let slow = |ran: Arc<AtomicUsize>| {
            move |reqs: Vec<u32>| {
                let ran = ran.clone();
                async move {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    ran.fetch_add(reqs.len(), Ordering::SeqCst);
                    Ok(reqs)
                }
            }
        };
        // The leader starts a batch of its own request and is aborted at once.
        let leader = {
            let (c, ran) = (c.clone(), ran.clone());
            tokio::spawn(async move { c.call(1, slow(ran)).await })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        // Queued behind it: one caller that stays, one that gives up while queued.
        let stays = {
            let (c, ran) = (c.clone(), ran.clone());
            tokio::spawn(async move { c.call(2, slow(ran)).await })
        };
        let leaves = {
            let (c, ran) = (c.clone(), ran.clone());
            tokio::spawn(async move { c.call(3, slow(ran)).await })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        leader.abort();
        leaves.abort();
        assert_eq!(stays.await.unwrap(), Ok(2));
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(
            ran.load(Ordering::SeqCst),
            2,
            "the aborted leader's batch ran, the withdrawn request did not"
        );
    }
}
