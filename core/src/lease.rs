//! Leases with fencing tokens (DOMAIN §5).
//!
//! Every claim issues a fresh token: the row's claim counter for that loop, plus one. A writer
//! must present the token it was given; a worker that paused past its lease cannot write, even if
//! its own process claimed the row again meanwhile (the new claim has a new token).

use crate::ids::WorkerId;
use crate::mutation::{self, planted, Mutant};
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Which of a row's three independent leases.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeaseKind {
    /// The poll loop's lease.
    Poll,
    /// The notification loop's lease.
    Notify,
    /// The cancel loop's lease.
    Cancel,
}

impl LeaseKind {
    /// Every kind.
    pub const ALL: [LeaseKind; 3] = [LeaseKind::Poll, LeaseKind::Notify, LeaseKind::Cancel];

    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            LeaseKind::Poll => "poll",
            LeaseKind::Notify => "notify",
            LeaseKind::Cancel => "cancel",
        }
    }
}

/// A fencing token: unique per (task, lease kind), strictly increasing with every claim.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LeaseToken(pub u64);

impl fmt::Debug for LeaseToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// A held lease as stored on the row and handed to the claimer.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Lease {
    /// The worker that claimed the row.
    pub owner: WorkerId,
    /// The claim's fencing token.
    pub token: LeaseToken,
    /// The lease is void at and after this instant.
    pub expires_at: Timestamp,
}

impl Lease {
    /// A claim may take a row whose lease is absent or expired at `now`.
    pub fn is_free(lease: Option<&Lease>, now: Timestamp) -> bool {
        lease.is_none_or(|l| l.expires_at <= now)
    }
}

/// Why a lease-guarded write was refused. Checked in this order; the first that applies is given.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Refusal {
    /// No task has that id.
    NoSuchTask,
    /// The row's lease is not the one presented: released, re-claimed, or voided.
    LeaseNotHeld,
    /// The lease presented is still on the row but expired at the write's time.
    LeaseExpired,
    /// The notification's dispatch version moved on.
    VersionMoved,
    /// A cancel was requested: poll results are discarded.
    CancelRequested,
    /// The task is terminal: it never changes again.
    Terminal,
}

/// Checks the lease part of a write guard: the presented lease must be the row's current one
/// (same owner and token) and unexpired at `at`.
pub fn check_lease(row: Option<&Lease>, presented: &Lease, at: Timestamp) -> Result<(), Refusal> {
    let Some(held) = row else {
        return Err(Refusal::LeaseNotHeld);
    };
    let same_claim = held.owner == presented.owner && held.token == presented.token;
    let same_claim = mutation::substitute(Mutant::LeaseTokenNotChecked, same_claim, |_| {
        planted::owner_only(held, presented)
    });
    if !same_claim {
        return Err(Refusal::LeaseNotHeld);
    }
    let expired = held.expires_at <= at;
    let expired = mutation::substitute(Mutant::LeaseExpiryNotChecked, expired, |_| false);
    if expired {
        return Err(Refusal::LeaseExpired);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(owner: &str, token: u64, exp: i64) -> Lease {
        Lease {
            owner: owner.into(),
            token: LeaseToken(token),
            expires_at: Timestamp::from_micros(exp),
        }
    }

    #[test]
    fn free_when_absent_or_expired() {
        assert!(Lease::is_free(None, Timestamp::from_micros(5)));
        assert!(Lease::is_free(
            Some(&lease("w", 1, 5)),
            Timestamp::from_micros(5)
        ));
        assert!(!Lease::is_free(
            Some(&lease("w", 1, 6)),
            Timestamp::from_micros(5)
        ));
    }

    #[test]
    fn guard_needs_same_owner_same_token_and_time_left() {
        let held = lease("w", 2, 100);
        let at = Timestamp::from_micros(50);
        assert_eq!(check_lease(Some(&held), &held, at), Ok(()));
        assert_eq!(check_lease(None, &held, at), Err(Refusal::LeaseNotHeld));
        assert_eq!(
            check_lease(Some(&held), &lease("w", 1, 100), at),
            Err(Refusal::LeaseNotHeld)
        );
        assert_eq!(
            check_lease(Some(&held), &lease("v", 2, 100), at),
            Err(Refusal::LeaseNotHeld)
        );
        assert_eq!(
            check_lease(Some(&held), &held, Timestamp::from_micros(100)),
            Err(Refusal::LeaseExpired)
        );
    }
}
