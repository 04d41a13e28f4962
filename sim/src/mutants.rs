//! The mutant table (`--mutants`): one campaign per planted bug, stopped at its first failing
//! seed, and a row per bug saying whether and where it was caught.

use crate::campaign::CampaignReport;
use crate::gateway_mode::GatewayMode;
use tasklatch_core::mutation::Mutant;

/// The gateway mode mutant `m`'s campaign runs in: the launcher's planted bugs over a peer
/// without idempotency need `langgraph` (the ledger would hide them); the others run in
/// `asked`, the mode on the command line.
pub fn gateway_for(m: Mutant, asked: GatewayMode) -> GatewayMode {
    if m.needs_agent_server() {
        GatewayMode::Langgraph
    } else {
        asked
    }
}

/// The planted bugs a table covers: `only`, else every one — on Postgres every one that lives
/// in SQL (the others do not depend on the store).
pub fn selection(only: Option<Mutant>, postgres: bool) -> Vec<Mutant> {
    match only {
        Some(m) => vec![m],
        None if postgres => Mutant::ALL
            .iter()
            .copied()
            .filter(|m| m.lives_in_sql())
            .collect(),
        None => Mutant::ALL.to_vec(),
    }
}

/// The table's header line.
pub fn header() -> String {
    format!(
        "{:<38} {:<7} {:<12} invariant",
        "mutant", "caught", "first seed"
    )
}

/// The row of mutant `m` after its campaign, and whether the campaign caught it.
pub fn row(m: Mutant, report: &CampaignReport) -> (String, bool) {
    let first = report.failures().next();
    match first.and_then(|f| f.violation.as_ref().map(|v| (f.seed, v))) {
        Some((seed, v)) => (
            format!("{:<38} {:<7} {:<12} {}", m.name(), "yes", seed, v.invariant),
            true,
        ),
        None => (format!("{:<38} {:<7} {:<12} -", m.name(), "NO", "-"), false),
    }
}

/// The table's last line.
pub fn footer(caught: usize, total: usize) -> String {
    format!("{caught}/{total} mutants caught")
}
