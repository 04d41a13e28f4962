//! The start-up check that a failover cannot lose what the worker acknowledged.
//!
//! Every write the API or the loops acknowledge — a submit, a cancel, an answer, a delivered
//! version — is a committed transaction. Promoting a standby that had not received it yet loses
//! it: the submit's task vanishes, a cancel is forgotten, a notification is delivered again.
//! So at start the worker reads how its commits are replicated (`tasklatch_pg::read_replication`)
//! and refuses to start when they are at risk (`tasklatch_pg::ReplicationMode::AtRisk`: standbys
//! attached asynchronously, named but none synchronous now, or `synchronous_commit` `off`/`local`
//! with standbys), unless `database.allow_async_replication = true` — then it starts with a
//! warning. A lone primary (no standby attached, none named) starts: nothing can be failed over
//! to as far as the server shows — unless `database.hosts` lists more than one host: then the
//! other hosts are the standbys a failover would promote, none of them receives the primary's
//! commits now, and the start is refused the same way (unless allowed). The mode is logged at
//! start either way.
//!
//! A commit waiting for the standby's acknowledgement is never ended by `statement_timeout`
//! (Postgres disarms it before the commit) and the worker never cancels a statement (sqlx sends
//! no cancel request): a cancelled wait would report success for a commit only the primary has.

use crate::run::StartError;
use sqlx::PgPool;
use tasklatch_pg::ReplicationMode;

/// Reads and judges the replication of `pool`'s commits (the module's rules): the mode, or
/// [`StartError::Replication`] saying what is at risk and how to fix it.
///
/// `hosts` is the length of `database.hosts` (0 without one): with more than one, a lone
/// primary is refused too (the module's rules).
pub async fn check_at_start(
    pool: &PgPool,
    allow_async: bool,
    hosts: usize,
) -> Result<ReplicationMode, StartError> {
    let found = tasklatch_pg::read_replication(pool)
        .await
        .map_err(|e| StartError::Database(format!("reading the replication settings: {e}")))?;
    let mode = found.mode();
    if mode == ReplicationMode::Standalone && hosts > 1 {
        let why = format!(
            "{mode}, yet database.hosts lists {hosts} hosts: the others are standbys a failover \
             would promote, and none receives this primary's commits now"
        );
        if !allow_async {
            return Err(StartError::Replication(refusal(&why)));
        }
        tracing::warn!(replication = %why, "replication checked (allowed by database.allow_async_replication)");
        return Ok(mode);
    }
    match (&mode, allow_async) {
        (ReplicationMode::AtRisk(_), false) => Err(StartError::Replication(refusal(&mode))),
        (ReplicationMode::AtRisk(_), true) => {
            tracing::warn!(
                replication = %mode,
                "replication checked: a failover can lose acknowledged submits, cancels, answers \
                 and delivered versions (allowed by database.allow_async_replication)"
            );
            Ok(mode)
        }
        _ => {
            tracing::info!(replication = %mode, "replication checked");
            Ok(mode)
        }
    }
}

/// The refusal: what was found, what is at risk, how to fix it.
fn refusal(mode: &dyn std::fmt::Display) -> String {
    format!(
        "{mode}. A failover to a standby that had not received a commit loses it: submits, \
         cancels and answers the API acknowledged, and notifications recorded as delivered, can \
         be lost (tasks vanish, cancels are forgotten, versions are delivered again). Fix it on \
         the primary: name the standbys in synchronous_standby_names (e.g. 'ANY 1 (s1, s2)' or \
         '*') and keep synchronous_commit on (or remote_write / remote_apply) for the worker's \
         role; or accept the risk with database.allow_async_replication = true"
    )
}
