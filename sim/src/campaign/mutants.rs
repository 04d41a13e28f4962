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

/// The table's header line; with `counts`, a last column of the seeds that caught each bug.
pub fn header(counts: bool) -> String {
    let line = format!(
        "{:<38} {:<7} {:<12} {:<18} seen first by",
        "mutant", "caught", "first seed", "invariant"
    );
    if counts {
        format!("{line:<100} seeds caught")
    } else {
        line
    }
}

/// The zoo's figures over campaigns that ran every seed (`--catch-counts`): per planted bug
/// its first catching seed and how many seeds caught it.
#[derive(Default)]
pub struct Zoo {
    /// (bug, first catching seed, seeds that caught it).
    rows: Vec<(Mutant, Option<u64>, usize)>,
}

impl Zoo {
    /// Adds `m`'s campaign; returns its count column (`12`).
    pub fn add(&mut self, m: Mutant, report: &CampaignReport) -> String {
        let first = report.failures().next().map(|f| f.seed);
        let count = report.failures().count();
        self.rows.push((m, first, count));
        count.to_string()
    }

    /// The summary line: the median seeds-to-first-catch (first seed + 1; a bug never caught
    /// counts as more than `seeds`) and the bugs caught by the fewest seeds.
    pub fn summary(&self, seeds: u64) -> String {
        let mut to_first: Vec<u64> = self
            .rows
            .iter()
            .map(|(_, first, _)| first.map_or(seeds + 1, |f| f + 1))
            .collect();
        to_first.sort_unstable();
        let median = to_first.get(to_first.len() / 2).copied().unwrap_or(0);
        let fewest = self.rows.iter().map(|(_, _, c)| *c).min().unwrap_or(0);
        let names: Vec<&str> = self
            .rows
            .iter()
            .filter(|(_, _, c)| *c == fewest)
            .map(|(m, _, _)| m.name())
            .collect();
        format!(
            "median seeds to first catch: {median}; fewest seeds catching one bug: {fewest} of {seeds} ({})",
            names.join(", ")
        )
    }
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
