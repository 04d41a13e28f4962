//! The conformance suite ([`tasklatch_core::conformance`]) run against the executable
//! specification: every store body for `MemStore`, every ledger body for `MemLedger`.

use tasklatch_core::conformance::{support, Harness};
use tasklatch_core::ledger::MemLedger;
use tasklatch_core::mem_store::MemStore;

/// A fresh `MemStore` per test; nothing to clean up.
struct Mem(MemStore);

impl Harness for Mem {
    type Subject = MemStore;

    async fn setup() -> Self {
        Mem(MemStore::new(support::policy()))
    }

    fn subject(&self) -> &MemStore {
        &self.0
    }

    async fn cleanup(self) {}
}

/// A fresh `MemLedger` per test.
struct MemRuns(MemLedger);

impl Harness for MemRuns {
    type Subject = MemLedger;

    async fn setup() -> Self {
        MemRuns(MemLedger::new())
    }

    fn subject(&self) -> &MemLedger {
        &self.0
    }

    async fn cleanup(self) {}
}

mod mem {
    tasklatch_core::store_conformance!(super::Mem);
}

mod mem_ledger {
    tasklatch_core::ledger_conformance!(super::MemRuns);
}
