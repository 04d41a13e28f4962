//! The engine's ports inside the simulation: the store, the remote server and the launcher
//! reached over simulated TCP, and a clock that may be skewed.
//!
//! Each port records what the engine asked and got back (the Jepsen client view) and injects
//! the plan's pauses: a paused lane stalls when a call returns, before the engine sees the
//! answer — the moment a real process pause would hurt most.

mod agent_launcher;
mod caller;
mod clock;
mod driver;
mod gateway_call;
mod launcher;
mod store;

pub use caller::Caller;
pub use clock::SimClock;
pub use driver::RpcDriver;
pub use launcher::RpcLauncher;
pub use store::RpcStore;

use tasklatch_core::engine::Engine;
use tasklatch_core::ids::WorkerId;

/// An engine wired to the simulation's ports.
pub type SimEngine = Engine<RpcStore, RpcDriver, RpcLauncher, SimClock>;

/// An engine whose every port calls as `caller`, on a clock skewed as `worker`'s (unskewed
/// for `None`), recording `owner` as its lease owner.
pub fn engine(caller: Caller, worker: Option<u32>, owner: WorkerId) -> SimEngine {
    let ctx = caller.ctx.clone();
    Engine::new(
        RpcStore {
            caller: caller.clone(),
        },
        RpcDriver {
            caller: caller.clone(),
        },
        RpcLauncher { caller },
        SimClock {
            ctx: ctx.clone(),
            worker,
        },
        owner,
        ctx.policy.clone(),
    )
}
