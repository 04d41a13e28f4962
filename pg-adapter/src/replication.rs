//! How the database replicates this connection's commits, and whether a failover could lose
//! one that was acknowledged.
//!
//! [`read_replication`] reads the connection's `synchronous_commit`, the primary's
//! `synchronous_standby_names` and the attached physical standbys with their sync state
//! (`sql/admin/replication.sql`). [`Replication::mode`] judges them:
//!
//! - **standalone**: no standby attached and no synchronous standby named — a lone primary
//!   (or a managed service that replicates below Postgres, e.g. storage-level Multi-AZ, which
//!   shows no standby here). Nothing to fail over to as far as this server can tell.
//! - **synchronous**: standbys are named, at least one attached standby is `sync` or `quorum`,
//!   and this connection's commits wait for them (`synchronous_commit` `on`, `remote_write` or
//!   `remote_apply`).
//! - **at risk** ([`Risk`], one or more): a commit is acknowledged before a standby has it, so
//!   promoting that standby loses it.

use crate::sql;
use sqlx::{PgPool, Row};
use std::fmt;

/// What [`read_replication`] found.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Replication {
    /// This connection's `synchronous_commit` (`on`, `remote_apply`, `remote_write`, `local`,
    /// `off`).
    pub synchronous_commit: String,
    /// The primary's `synchronous_standby_names` (empty: none).
    pub synchronous_standby_names: String,
    /// The attached physical standbys.
    pub standbys: Vec<Standby>,
}

/// One attached standby (a row of `pg_stat_replication`).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Standby {
    /// Its `application_name`; `None` when this role may not see it.
    pub name: Option<String>,
    /// `streaming`, `catchup`, `startup`, …; `None` when hidden.
    pub state: Option<String>,
    /// `sync`, `quorum`, `potential` or `async`; `None` when hidden.
    pub sync_state: Option<String>,
}

/// Why an acknowledged commit could be lost in a failover.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Risk {
    /// `synchronous_commit` is `off` or `local`: commits never wait for a standby.
    LocalCommits(String),
    /// Standbys are attached but none is named in `synchronous_standby_names`: all asynchronous.
    AsyncStandbys(usize),
    /// Standbys are named, but none attached is `sync` or `quorum` now.
    NoSyncStandby {
        /// `synchronous_standby_names`.
        names: String,
        /// Standbys attached (none of them synchronous).
        attached: usize,
    },
    /// The standbys' sync state is hidden from this role (grant it `pg_monitor`).
    Hidden,
}

/// The judgement of [`Replication::mode`].
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum ReplicationMode {
    /// No standby attached, none named.
    Standalone,
    /// Commits wait for `synchronous` of the `attached` standbys.
    Synchronous {
        /// Standbys in sync state `sync` or `quorum`.
        synchronous: usize,
        /// Standbys attached.
        attached: usize,
    },
    /// An acknowledged commit could be lost in a failover, for these reasons.
    AtRisk(Vec<Risk>),
}

/// Reads the replication of `pool`'s connections (one statement).
pub async fn read_replication(pool: &PgPool) -> Result<Replication, sqlx::Error> {
    let rows = sqlx::query(sql::REPLICATION).fetch_all(pool).await?;
    let mut found = Replication {
        synchronous_commit: String::new(),
        synchronous_standby_names: String::new(),
        standbys: Vec::new(),
    };
    for row in rows {
        found.synchronous_commit = row.try_get("synchronous_commit")?;
        found.synchronous_standby_names = row.try_get("synchronous_standby_names")?;
        if row.try_get::<Option<i32>, _>("pid")?.is_some() {
            found.standbys.push(Standby {
                name: row.try_get("application_name")?,
                state: row.try_get("state")?,
                sync_state: row.try_get("sync_state")?,
            });
        }
    }
    Ok(found)
}

impl Replication {
    /// Judges what was found (the module's rules).
    pub fn mode(&self) -> ReplicationMode {
        let names = self.synchronous_standby_names.trim();
        let attached = self.standbys.len();
        if names.is_empty() && attached == 0 {
            return ReplicationMode::Standalone;
        }
        let mut risks = Vec::new();
        if matches!(self.synchronous_commit.as_str(), "off" | "local") {
            risks.push(Risk::LocalCommits(self.synchronous_commit.clone()));
        }
        let synchronous = self
            .standbys
            .iter()
            .filter(|s| matches!(s.sync_state.as_deref(), Some("sync" | "quorum")))
            .count();
        if names.is_empty() {
            risks.push(Risk::AsyncStandbys(attached));
        } else if self.standbys.iter().any(|s| s.sync_state.is_none()) {
            risks.push(Risk::Hidden);
        } else if synchronous == 0 {
            risks.push(Risk::NoSyncStandby {
                names: names.to_owned(),
                attached,
            });
        }
        if risks.is_empty() {
            ReplicationMode::Synchronous {
                synchronous,
                attached,
            }
        } else {
            ReplicationMode::AtRisk(risks)
        }
    }
}

impl fmt::Display for Risk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Risk::LocalCommits(v) => write!(
                f,
                "synchronous_commit is '{v}' for this connection: commits do not wait for a standby"
            ),
            Risk::AsyncStandbys(n) => write!(
                f,
                "{n} standby(s) attached but synchronous_standby_names is empty: they replicate \
                 asynchronously"
            ),
            Risk::NoSyncStandby { names, attached } => write!(
                f,
                "synchronous_standby_names is '{names}' but none of the {attached} attached \
                 standby(s) is synchronous now"
            ),
            Risk::Hidden => f.write_str(
                "the standbys' sync state is hidden from this role (grant it pg_monitor to let \
                 the worker see pg_stat_replication)",
            ),
        }
    }
}

impl fmt::Display for ReplicationMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplicationMode::Standalone => f.write_str("standalone (no standby attached or named)"),
            ReplicationMode::Synchronous {
                synchronous,
                attached,
            } => write!(
                f,
                "synchronous ({synchronous} of {attached} attached standby(s) synchronous)"
            ),
            ReplicationMode::AtRisk(risks) => {
                let reasons: Vec<String> = risks.iter().map(Risk::to_string).collect();
                write!(f, "asynchronous: {}", reasons.join("; "))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn standby(sync_state: Option<&str>) -> Standby {
        Standby {
            name: Some("walreceiver".into()),
            state: Some("streaming".into()),
            sync_state: sync_state.map(str::to_owned),
        }
    }

    fn found(commit: &str, names: &str, standbys: Vec<Standby>) -> Replication {
        Replication {
            synchronous_commit: commit.into(),
            synchronous_standby_names: names.into(),
            standbys,
        }
    }

    #[test]
    fn a_lone_primary_is_standalone_whatever_its_commit_setting() {
        assert_eq!(found("on", "", vec![]).mode(), ReplicationMode::Standalone);
        assert_eq!(found("off", "", vec![]).mode(), ReplicationMode::Standalone);
    }

    #[test]
    fn a_synchronous_standby_that_commits_wait_for_is_synchronous() {
        for commit in ["on", "remote_write", "remote_apply"] {
            let r = found(
                commit,
                "*",
                vec![standby(Some("sync")), standby(Some("potential"))],
            );
            let mode = ReplicationMode::Synchronous {
                synchronous: 1,
                attached: 2,
            };
            assert_eq!(r.mode(), mode, "{commit}");
        }
        let quorum = found("on", "ANY 1 (a, b)", vec![standby(Some("quorum"))]);
        assert!(matches!(quorum.mode(), ReplicationMode::Synchronous { .. }));
    }

    #[test]
    fn every_way_to_lose_an_acknowledged_commit_is_at_risk() {
        let cases = [
            (
                found("on", "", vec![standby(Some("async"))]),
                Risk::AsyncStandbys(1),
            ),
            (
                found("local", "*", vec![standby(Some("sync"))]),
                Risk::LocalCommits("local".into()),
            ),
            (
                found("on", "s1", vec![standby(Some("async"))]),
                Risk::NoSyncStandby {
                    names: "s1".into(),
                    attached: 1,
                },
            ),
            (
                found("on", "s1", vec![]),
                Risk::NoSyncStandby {
                    names: "s1".into(),
                    attached: 0,
                },
            ),
            (found("on", "*", vec![standby(None)]), Risk::Hidden),
        ];
        for (r, risk) in cases {
            assert_eq!(r.mode(), ReplicationMode::AtRisk(vec![risk]), "{r:?}");
        }
        let both = found("off", "", vec![standby(Some("async"))]).mode();
        let ReplicationMode::AtRisk(risks) = both else {
            panic!("{both:?}")
        };
        assert_eq!(risks.len(), 2);
    }
}
