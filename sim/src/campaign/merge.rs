//! Campaign records: the JSON written beside every Markdown summary (`--summary x.md` also
//! writes `x.json`), and the merge of the records of one campaign's shards (`--shard K/N` on
//! several machines) into one summary, as if one machine had run every seed.

use crate::campaign::replay_command::ReplayCommand;
use crate::campaign::{CampaignReport, SeedResult};
use crate::plan::json_input;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The format of [`CampaignRecord`] this build writes and reads.
pub const FORMAT: u32 = 1;

/// What a campaign ran and found, in full: enough to rebuild its summary or merge it with the
/// records of the other shards of the same campaign.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CampaignRecord {
    /// [`FORMAT`].
    pub format: u32,
    /// The command line that ran it.
    pub command: String,
    /// How its runs were set up (store, knobs, planted bug): shards of one campaign agree.
    pub replay: ReplayCommand,
    /// Per seed, in seed order.
    pub results: Vec<SeedResult>,
    /// Wall time.
    pub wall: Duration,
}

/// Where the record of the summary at `summary` goes: the same path with `.json`.
pub fn record_path(summary: &Path) -> PathBuf {
    summary.with_extension("json")
}

/// Writes `record` to `path`.
pub fn write(path: &Path, record: &CampaignRecord) -> Result<(), String> {
    let json = serde_json::to_string_pretty(record)
        .map_err(|e| format!("cannot encode the campaign record: {e}"))?;
    std::fs::write(path, json)
        .map_err(|e| format!("cannot write campaign record {}: {e}", path.display()))
}

/// Reads the record at `path`; the error names the file, and the line and field at fault.
pub fn read(path: &Path) -> Result<CampaignRecord, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read campaign record {}: {e}", path.display()))?;
    let record: CampaignRecord =
        json_input::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    if record.format != FORMAT {
        return Err(format!(
            "{}: campaign record format {} (this build reads {FORMAT})",
            path.display(),
            record.format
        ));
    }
    Ok(record)
}

/// Shards merged into one campaign.
#[derive(Debug)]
pub struct Merged {
    /// Every seed's result, in seed order; the wall time is the shards' summed (machine time).
    pub report: CampaignReport,
    /// The shards' command lines, in the order given.
    pub commands: Vec<String>,
    /// How the runs were set up.
    pub replay: ReplayCommand,
}

/// Merges the records of one campaign's shards. Refused, naming the files: no record, records
/// of differently set-up runs (store, knobs, planted bug), or a seed in two records.
pub fn merge(records: Vec<(PathBuf, CampaignRecord)>) -> Result<Merged, String> {
    let Some((first_path, first)) = records.first() else {
        return Err("no campaign record to merge".into());
    };
    let (first_path, replay) = (first_path.clone(), first.replay.clone());
    let mut seen: BTreeMap<u64, PathBuf> = BTreeMap::new();
    let mut results = Vec::new();
    let (mut commands, mut wall) = (Vec::new(), Duration::ZERO);
    for (path, record) in records {
        if record.replay != replay {
            return Err(format!(
                "{} and {} are records of differently set-up campaigns ({:?} vs {:?}): only shards of one campaign merge",
                first_path.display(),
                path.display(),
                replay,
                record.replay
            ));
        }
        for r in &record.results {
            if let Some(other) = seen.insert(r.seed, path.clone()) {
                return Err(format!(
                    "seed {} is in both {} and {}: shards must not overlap",
                    r.seed,
                    other.display(),
                    path.display()
                ));
            }
        }
        results.extend(record.results);
        commands.push(record.command);
        wall += record.wall;
    }
    results.sort_by_key(|r| r.seed);
    Ok(Merged {
        report: CampaignReport { results, wall },
        commands,
        replay,
    })
}
