//! The open extension clients: one slot per server, so a server that is slow to connect only
//! delays calls to itself. A connect runs inside the caller's deadline (waiting for the slot
//! counts too), and a failed connect is remembered for [`FAILED_CONNECT_TTL`]: calls to a
//! blackholed server fail fast instead of each waiting a full timeout.

use super::{connect, Conn, ConnectError};
use crate::errors::timed_out;
use crate::server::Server;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tasklatch_core::ids::ServerId;
use tokio::time::Instant;

/// How long a failed connect is answered from memory before the server is tried again.
pub(crate) const FAILED_CONNECT_TTL: Duration = Duration::from_secs(2);

/// One server's client, or its last failed connect.
#[derive(Default)]
struct Slot {
    conn: Option<Arc<Conn>>,
    failed: Option<(Instant, ConnectError)>,
}

/// The slots, by server. At most one slot per configured server (the configuration bounds the
/// number of servers), so the map never grows past it.
#[derive(Default)]
pub(crate) struct Connections {
    slots: Mutex<BTreeMap<ServerId, Arc<tokio::sync::Mutex<Slot>>>>,
}

impl Connections {
    /// The server's client, opened if need be, within `server`'s request timeout (one opening
    /// at a time per server; other servers are never waited for).
    pub(crate) async fn get(&self, server: &Server) -> Result<Arc<Conn>, ConnectError> {
        let slot = self.slot(&server.id);
        let timeout = server.timeout();
        match tokio::time::timeout(timeout, open(&slot, server)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(ConnectError::Failed(timed_out(timeout))),
        }
    }

    /// Closes every open client, each within `within`, so its transport ends while the runtime
    /// still runs (a client dropped by a runtime shutting down logs an error from rmcp). A
    /// client still held by a call in flight, or a slot busy connecting, is only dropped.
    pub(crate) async fn close_all(&self, within: Duration) {
        let slots = match self.slots.lock() {
            Ok(mut slots) => std::mem::take(&mut *slots),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        };
        for slot in slots.into_values() {
            let conn = match slot.try_lock() {
                Ok(mut slot) => slot.conn.take(),
                Err(_) => None,
            };
            if let Some(Ok(mut conn)) = conn.map(Arc::try_unwrap) {
                let _ = conn.close_with_timeout(within).await;
            }
        }
    }

    /// Forgets the server's client (its transport failed); the next call opens a new one.
    pub(crate) async fn drop_client(&self, server: &Server) {
        self.slot(&server.id).lock().await.conn = None;
    }

    fn slot(&self, id: &ServerId) -> Arc<tokio::sync::Mutex<Slot>> {
        let mut slots = match self.slots.lock() {
            Ok(slots) => slots,
            Err(poisoned) => poisoned.into_inner(),
        };
        slots.entry(id.clone()).or_default().clone()
    }
}

/// The slot's open client, its remembered failure, or a new connect (remembered if it fails).
async fn open(slot: &tokio::sync::Mutex<Slot>, server: &Server) -> Result<Arc<Conn>, ConnectError> {
    let mut slot = slot.lock().await;
    if let Some(conn) = slot.conn.as_ref().filter(|c| !c.is_closed()) {
        return Ok(conn.clone());
    }
    if let Some((until, error)) = &slot.failed {
        if Instant::now() < *until {
            return Err(error.clone());
        }
    }
    match connect(server).await {
        Ok(conn) => {
            let conn = Arc::new(conn);
            slot.conn = Some(conn.clone());
            slot.failed = None;
            Ok(conn)
        }
        Err(error) => {
            slot.conn = None;
            slot.failed = Some((Instant::now() + FAILED_CONNECT_TTL, error.clone()));
            Err(error)
        }
    }
}
