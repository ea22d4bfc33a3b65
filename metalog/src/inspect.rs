//! What a metadata directory holds and whether the coordinator may start from it: the newest
//! snapshot must read, the logs from its generation on must all be there and whole, and only
//! the end of the last one may be torn. Start-up, `shoal check` and `shoal repair` all judge
//! a directory by this one function.

use std::path::{Path, PathBuf};

use crate::format::{format_path, read_format, FormatStatus};
use crate::log::{log_path, read_file};
use crate::problems::Problem;
use crate::snapshots::{list_generations, read_snapshot, snapshot_path};
use crate::MetaLogError;
use shoal_coordinator::frames::{scan_frames, FrameDamage};
use shoal_coordinator::state::CoordinatorState;
use shoal_coordinator::Entry;

/// One log of the chain recovery replays.
#[derive(Debug)]
pub struct LogReport {
    pub generation: u64,
    pub path: PathBuf,
    pub bytes: u64,
    /// Records before the first bad frame, if any.
    pub records: usize,
    pub valid_bytes: u64,
    pub damage: Option<FrameDamage>,
}

/// A starting point other than the newest snapshot from which every log that follows is
/// whole: recovery from it loses nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fallback {
    /// The older snapshot it starts from, or None for the first log.
    pub snapshot: Option<u64>,
}

#[derive(Debug)]
pub struct Inspection {
    pub dir: PathBuf,
    pub format: FormatStatus,
    /// Every snapshot present, ascending.
    pub snapshots: Vec<u64>,
    /// The snapshot recovery starts from (the newest, when it reads).
    pub base: Option<u64>,
    /// The logs from the base on, ascending.
    pub chain: Vec<LogReport>,
    /// Why the coordinator may not start; empty when it may.
    pub problems: Vec<Problem>,
    /// Where the newest snapshot is unreadable: an older, whole starting point.
    pub fallback: Option<Fallback>,
    /// The base snapshot's state and the chain's records, for recovery to replay.
    pub(crate) state: CoordinatorState,
    pub(crate) records: Vec<Vec<Entry>>,
}

impl Inspection {
    /// The torn tail recovery cuts off the last log: its path, where it starts, its bytes.
    pub fn torn_tail(&self) -> Option<(&Path, u64, u64)> {
        let last = self.chain.last()?;
        let damage = last.damage.as_ref()?;
        damage.is_torn_tail().then_some((
            last.path.as_path(),
            last.valid_bytes,
            last.bytes - last.valid_bytes,
        ))
    }
}

pub async fn inspect(dir: &Path) -> Result<Inspection, MetaLogError> {
    let format = read_format(dir)?;
    let (snapshots, logs) = list_generations(dir).await?;
    let mut inspection = Inspection {
        dir: dir.to_path_buf(),
        format: format.clone(),
        snapshots: snapshots.clone(),
        base: None,
        chain: Vec::new(),
        problems: Vec::new(),
        fallback: None,
        state: CoordinatorState::default(),
        records: Vec::new(),
    };
    let found = match format {
        FormatStatus::Unknown(found) => Some(found),
        FormatStatus::Absent if holds_records(dir, &snapshots, &logs) => {
            Some("none recorded (written by a Shoal before formats were recorded)".to_string())
        }
        _ => None,
    };
    if let Some(found) = found {
        inspection.problems.push(Problem::UnknownFormat {
            path: format_path(dir),
            found,
        });
        return Ok(inspection);
    }
    if let Some(&newest) = snapshots.last() {
        match read_snapshot(dir, newest).await {
            Ok(state) => {
                inspection.base = Some(newest);
                inspection.state = state;
            }
            Err(e) => {
                inspection.problems.push(Problem::UnreadableSnapshot {
                    path: snapshot_path(dir, newest),
                    reason: e.to_string(),
                });
                inspection.fallback = find_fallback(dir, &snapshots, &logs).await?;
                return Ok(inspection);
            }
        }
    }
    let chain = read_chain(dir, inspection.base, &logs).await?;
    inspection.chain = chain.reports;
    inspection.records = chain.records;
    inspection.problems.extend(chain.problems);
    Ok(inspection)
}

struct Chain {
    reports: Vec<LogReport>,
    records: Vec<Vec<Entry>>,
    problems: Vec<Problem>,
}

/// Reads the logs from `base` (or from the first, without a snapshot) to the newest.
async fn read_chain(dir: &Path, base: Option<u64>, logs: &[u64]) -> Result<Chain, MetaLogError> {
    let first = base.unwrap_or(0);
    let chain_logs: Vec<u64> = logs.iter().copied().filter(|g| *g >= first).collect();
    let mut chain = Chain {
        reports: Vec::new(),
        records: Vec::new(),
        problems: Vec::new(),
    };
    let fresh = base.is_none() && logs.is_empty();
    if chain_logs.first() != Some(&first) && !fresh {
        let to = chain_logs.first().map(|g| g - 1);
        chain.problems.push(Problem::MissingLogs {
            first_missing: log_path(dir, first),
            generations: (first, to),
        });
    }
    for pair in chain_logs.windows(2) {
        if pair[1] != pair[0] + 1 {
            chain.problems.push(Problem::MissingLogs {
                first_missing: log_path(dir, pair[0] + 1),
                generations: (pair[0] + 1, Some(pair[1] - 1)),
            });
        }
    }
    let last = chain_logs.last().copied();
    for generation in chain_logs {
        let path = log_path(dir, generation);
        let contents = read_file(&path).await?;
        let scan = scan_frames(&contents);
        if let Some(damage) = &scan.damage {
            if Some(generation) != last || !damage.is_torn_tail() {
                chain.problems.push(Problem::DamagedLog {
                    path: path.clone(),
                    damage: damage.clone(),
                    records_before: scan.entries.len(),
                    last_generation: Some(generation) == last,
                });
            }
        }
        chain.reports.push(LogReport {
            generation,
            path,
            bytes: contents.len() as u64,
            records: scan.entries.len(),
            valid_bytes: scan.valid_bytes as u64,
            damage: scan.damage,
        });
        chain.records.push(scan.entries);
    }
    Ok(chain)
}

/// An older snapshot that reads (or none, when the logs go back to the first) from which
/// every later log is present and whole.
async fn find_fallback(
    dir: &Path,
    snapshots: &[u64],
    logs: &[u64],
) -> Result<Option<Fallback>, MetaLogError> {
    let older = &snapshots[..snapshots.len().saturating_sub(1)];
    for &generation in older.iter().rev() {
        if read_snapshot(dir, generation).await.is_ok() {
            let chain = read_chain(dir, Some(generation), logs).await?;
            return Ok(chain.problems.is_empty().then_some(Fallback {
                snapshot: Some(generation),
            }));
        }
    }
    if logs.first() == Some(&0) {
        let chain = read_chain(dir, None, logs).await?;
        if chain.problems.is_empty() {
            return Ok(Some(Fallback { snapshot: None }));
        }
    }
    Ok(None)
}

impl Inspection {
    /// The state recovery would start with: the base snapshot with the chain replayed.
    pub fn replayed_state(self) -> CoordinatorState {
        let mut state = self.state;
        for record in self.records.iter().flatten() {
            state.apply(record);
        }
        state
    }
}

/// Whether any snapshot, or any log with bytes in it, is present: what an unrecorded format
/// would be guessed for.
fn holds_records(dir: &Path, snapshots: &[u64], logs: &[u64]) -> bool {
    !snapshots.is_empty()
        || logs
            .iter()
            .any(|g| std::fs::metadata(log_path(dir, *g)).map_or(true, |m| m.len() > 0))
}
