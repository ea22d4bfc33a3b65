//! Start-up: rebuild the state from the newest snapshot and the logs after it, or refuse.
//! Only the torn end of an interrupted append to the newest log is cut away; every other
//! damage stops the start with a message that names the file and what to do.

use std::path::Path;
use std::time::Instant;

use crate::format::{write_format, FormatStatus};
use crate::inspect::{inspect, Inspection};
use crate::log::MetadataLog;
use crate::snapshots::remove_obsolete;
use crate::MetaLogError;
use shoal_coordinator::state::CoordinatorState;

/// What recovery found, for the start-up log line.
#[derive(Debug, Default)]
pub struct RecoveryStats {
    pub snapshot_generation: Option<u64>,
    pub records_replayed: usize,
    pub elapsed_ms: u128,
}

pub async fn recover(
    dir: &Path,
) -> Result<(CoordinatorState, MetadataLog, RecoveryStats), MetaLogError> {
    let started = Instant::now();
    std::fs::create_dir_all(dir).map_err(|e| MetaLogError::Io {
        path: dir.display().to_string(),
        source: e,
    })?;
    let inspection = inspect(dir).await?;
    if !inspection.problems.is_empty() {
        return Err(MetaLogError::Damaged(refusal(&inspection)));
    }
    if inspection.format == FormatStatus::Absent {
        write_format(dir)?;
    }
    let (generation, valid_bytes) = match inspection.chain.last() {
        Some(last) => (last.generation, last.valid_bytes),
        None => (inspection.base.unwrap_or(0), 0),
    };
    let mut stats = RecoveryStats {
        snapshot_generation: inspection.base,
        records_replayed: inspection.records.iter().map(Vec::len).sum(),
        elapsed_ms: 0,
    };
    let state = inspection.replayed_state();
    let log = MetadataLog::open_for_append(dir, generation, valid_bytes).await?;
    remove_obsolete(dir).await;
    stats.elapsed_ms = started.elapsed().as_millis();
    Ok((state, log, stats))
}

/// Why the coordinator will not start, and the way out.
pub fn refusal(inspection: &Inspection) -> String {
    let mut text = String::from("the metadata cannot be recovered as it is:");
    for problem in &inspection.problems {
        text.push_str("\n  - ");
        text.push_str(&problem.to_string());
    }
    let data_dir = inspection
        .dir
        .parent()
        .unwrap_or(&inspection.dir)
        .display()
        .to_string();
    if let Some(fallback) = inspection.fallback {
        let from = match fallback.snapshot {
            Some(g) => format!("snapshot generation {g}"),
            None => "the first log".to_string(),
        };
        text.push_str(&format!(
            "\nNothing is lost: {from} and every log after it are whole. \
             `shoal repair --data-dir {data_dir}` sets the damaged snapshot aside and the broker \
             then starts from them."
        ));
    } else if inspection.problems.iter().all(|p| p.can_be_cut()) {
        text.push_str(&format!(
            "\nRestore the named files from a backup, or run `shoal check --data-dir {data_dir}` \
             to see what starting from the last good point would lose and `shoal repair \
             --data-dir {data_dir} --accept-loss` to do it (damaged files are moved to \
             {}/damaged, never deleted).",
            inspection.dir.display()
        ));
    }
    text
}
