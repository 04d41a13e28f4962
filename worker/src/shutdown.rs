//! SIGTERM and SIGINT.
//!
//! The first signal starts a graceful stop (see [`crate::run`]): the worker stops claiming,
//! lets the calls in flight finish or releases what it had not started — never counting a
//! failure for its own shutdown — and exits within one lease. A second signal exits at once
//! (status 130): whatever is still claimed simply waits for its lease to expire.

use tokio::signal::unix::{signal, Signal, SignalKind};

/// The process exit status after a second signal.
pub const FORCED_EXIT: i32 = 130;

/// The two signals, registered (so the default action — dying at once — no longer applies).
pub struct Signals {
    term: Signal,
    int: Signal,
}

impl Signals {
    /// Registers handlers for SIGTERM and SIGINT.
    pub fn install() -> std::io::Result<Signals> {
        Ok(Signals {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
        })
    }

    /// The next signal's name.
    pub async fn next(&mut self) -> &'static str {
        tokio::select! {
            biased;
            _ = self.term.recv() => "SIGTERM",
            _ = self.int.recv() => "SIGINT",
        }
    }

    /// From now on, another signal ends the process at once.
    pub fn exit_on_next(mut self) {
        tokio::spawn(async move {
            let name = self.next().await;
            tracing::warn!(
                signal = name,
                "second signal: exiting at once; claimed rows wait for their leases to expire"
            );
            std::process::exit(FORCED_EXIT);
        });
    }
}
