//! Making a [`PgStore`] and asking what it was made with.

use super::{Inner, PgStore};
use crate::sql::GUARDED_WRITES;
use sqlx::PgPool;
use std::sync::Arc;
#[cfg(feature = "mutations")]
use tasklatch_core::mutation::Mutant;
use tasklatch_core::policy::Policy;

impl PgStore {
    /// A store over `pool` (already migrated, see [`crate::migrate`]) whose transitions use
    /// `policy` — the same policy the engines use.
    pub fn new(pool: PgPool, policy: Policy) -> Self {
        PgStore {
            inner: Arc::new(Inner {
                pool,
                policy,
                writes: GUARDED_WRITES,
                #[cfg(feature = "mutations")]
                mutant: None,
            }),
        }
    }

    /// [`PgStore::new`] with the SQL variant of a planted bug switched on, if `mutant` lives in
    /// SQL ([`Mutant::lives_in_sql`]: the lease-token, lease-expiry and cancel-requested
    /// guards); other mutants are ignored. The thread-local `mutation::active` switch does not
    /// reach the database, so the mutant must be passed here.
    #[cfg(feature = "mutations")]
    pub fn with_mutant(pool: PgPool, policy: Policy, mutant: Option<Mutant>) -> Self {
        let mutant = mutant.filter(|m| m.lives_in_sql());
        PgStore {
            inner: Arc::new(Inner {
                pool,
                policy,
                writes: crate::planted::guarded_writes(mutant),
                mutant,
            }),
        }
    }

    /// The connection pool.
    pub fn pool(&self) -> &PgPool {
        &self.inner.pool
    }

    /// The timings the transitions use.
    pub fn policy(&self) -> &Policy {
        &self.inner.policy
    }

    /// The planted bug in force, if any.
    #[cfg(feature = "mutations")]
    pub fn mutant(&self) -> Option<Mutant> {
        self.inner.mutant
    }
}
