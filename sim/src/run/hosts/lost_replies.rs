//! Lost replies: a `LoseReplies` fault on a service makes its host do the work and then drop
//! the reply, so the caller cannot tell a lost request from a lost reply.

use crate::plan::fault::{FaultKind, Service};
use crate::run::ctx::{now_ms, Ctx};
use std::sync::atomic::{AtomicU64, Ordering};

/// Whether a `LoseReplies` fault on `service` drops this reply (every `one_in`-th reply the
/// service counts in `counter` while the fault is active). The work is done either way.
pub fn lose_reply(ctx: &Ctx, service: Service, counter: &AtomicU64) -> bool {
    let Some((index, one_in)) = ctx
        .active(now_ms(), |k| match k {
            FaultKind::LoseReplies { service: s, one_in } if *s == service => Some(*one_in),
            _ => None,
        })
        .next()
    else {
        return false;
    };
    let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
    let drop = n % u64::from(one_in.max(1)) == 0;
    if drop {
        ctx.fire(index, service.host());
    }
    drop
}
