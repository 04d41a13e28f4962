//! The mutant table (`--mutants`): one campaign per planted bug, stopped at its first failing
//! seed, and a row per bug saying whether and where it was caught.

use crate::campaign::CampaignReport;
use crate::plan::gateway_mode::GatewayMode;
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
        "{:<38} {:<7} {:<12} {:<18} seen first by",
        "mutant", "caught", "first seed", "invariant"
    )
}

/// The row of mutant `m` after its campaign, and whether the campaign caught it. "Seen first
/// by" compares, in the first failing seed's history, the checker's first violation with the
/// first row rule the engine's own check found broken.
pub fn row(m: Mutant, report: &CampaignReport) -> (String, bool) {
    let first = report.failures().next();
    match first.and_then(|f| f.violation.as_ref().map(|v| (f, v))) {
        Some((f, v)) => {
            let seen_by = match (f.row_rule_broken, v.entry) {
                (Some(rule), Some(entry)) if rule <= entry => "row rule in the code",
                (Some(_), None) => "row rule in the code",
                _ => "checker",
            };
            let invariant = v.invariant.to_string();
            let row = format!(
                "{:<38} {:<7} {:<12} {invariant:<18} {seen_by}",
                m.name(),
                "yes",
                f.seed
            );
            (row, true)
        }
        None => (format!("{:<38} {:<7} {:<12} -", m.name(), "NO", "-"), false),
    }
}

/// The table's last line.
pub fn footer(caught: usize, total: usize) -> String {
    format!("{caught}/{total} mutants caught")
}
