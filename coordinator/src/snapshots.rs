//! Snapshot files and recovery: load the newest intact snapshot, replay the logs after it,
//! and remove files that a newer snapshot has made obsolete.

use std::path::{Path, PathBuf};
use std::time::Instant;

use glommio::io::{BufferedFile, OpenOptions};

use crate::log::{io_error, log_path, read_all, sync_dir, MetadataLog};
use crate::state::CoordinatorState;
use crate::CoordinatorError;

fn snapshot_path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("snapshot-{generation:020}.bin"))
}

/// What recovery found, for the start-up log line.
#[derive(Debug, Default)]
pub struct RecoveryStats {
    pub snapshot_generation: Option<u64>,
    pub records_replayed: usize,
    pub elapsed_ms: u128,
}

/// Generations of the snapshots and logs present, each ascending.
async fn list_generations(dir: &Path) -> Result<(Vec<u64>, Vec<u64>), CoordinatorError> {
    let dir_owned = dir.to_path_buf();
    glommio::executor()
        .spawn_blocking(move || {
            let mut snapshots = Vec::new();
            let mut logs = Vec::new();
            let entries = std::fs::read_dir(&dir_owned).map_err(|e| CoordinatorError::Io {
                path: dir_owned.display().to_string(),
                source: e,
            })?;
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Some(name) = name.to_str() else { continue };
                let parse = |prefix: &str, suffix: &str| {
                    name.strip_prefix(prefix)?
                        .strip_suffix(suffix)?
                        .parse::<u64>()
                        .ok()
                };
                if let Some(g) = parse("snapshot-", ".bin") {
                    snapshots.push(g);
                } else if let Some(g) = parse("metadata-", ".log") {
                    logs.push(g);
                }
            }
            snapshots.sort_unstable();
            logs.sort_unstable();
            Ok((snapshots, logs))
        })
        .await
}

pub async fn recover(
    dir: &Path,
) -> Result<(CoordinatorState, MetadataLog, RecoveryStats), CoordinatorError> {
    let started = Instant::now();
    std::fs::create_dir_all(dir).map_err(|e| CoordinatorError::Io {
        path: dir.display().to_string(),
        source: e,
    })?;
    let (snapshots, logs) = list_generations(dir).await?;
    let mut stats = RecoveryStats::default();
    let mut state = CoordinatorState::default();
    for generation in snapshots.iter().rev() {
        match read_snapshot(dir, *generation).await {
            Ok(loaded) => {
                state = loaded;
                stats.snapshot_generation = Some(*generation);
                break;
            }
            Err(e) => tracing::warn!(generation, error = %e, "skipping an unreadable snapshot"),
        }
    }
    let first_log = stats.snapshot_generation.unwrap_or(0);
    let mut replay: Vec<u64> = logs.into_iter().filter(|g| *g >= first_log).collect();
    if replay.is_empty() {
        replay.push(first_log);
    }
    let mut active = None;
    for generation in replay {
        let (log, records) = MetadataLog::open(dir, generation).await?;
        for record in &records {
            state.apply(record);
        }
        stats.records_replayed += records.len();
        active = Some(log);
    }
    let log = active.expect("at least one log generation is opened");
    remove_obsolete(dir, first_log).await;
    stats.elapsed_ms = started.elapsed().as_millis();
    Ok((state, log, stats))
}

async fn read_snapshot(dir: &Path, generation: u64) -> Result<CoordinatorState, CoordinatorError> {
    let path = snapshot_path(dir, generation);
    let file = BufferedFile::open(&path)
        .await
        .map_err(|e| io_error(&path, e))?;
    let image = read_all(&file, &path).await;
    let _ = file.close().await;
    CoordinatorState::decode_snapshot(&image?)
}

/// Writes the state as snapshot `generation` durably: to a temporary name, synced, then
/// renamed into place, so a crash never leaves a half-written snapshot under the real name.
pub async fn write_snapshot(
    dir: &Path,
    generation: u64,
    state: &CoordinatorState,
) -> Result<usize, CoordinatorError> {
    let image = state.encode_snapshot();
    let size = image.len();
    let path = snapshot_path(dir, generation);
    let tmp = path.with_extension("tmp");
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .buffered_open(&tmp)
        .await
        .map_err(|e| io_error(&tmp, e))?;
    let mut written = 0;
    // Chunked, so no single write holds the whole image twice.
    for chunk in image.chunks(8 << 20) {
        written += file
            .write_at(chunk.to_vec(), written as u64)
            .await
            .map_err(|e| io_error(&tmp, e))?;
    }
    file.fdatasync().await.map_err(|e| io_error(&tmp, e))?;
    file.close().await.map_err(|e| io_error(&tmp, e))?;
    glommio::io::rename(&tmp, &path)
        .await
        .map_err(|e| io_error(&path, e))?;
    sync_dir(dir).await?;
    Ok(size)
}

/// Removes logs and snapshots older than generation `keep_from`; failures only cost disk.
pub async fn remove_obsolete(dir: &Path, keep_from: u64) {
    let Ok((snapshots, logs)) = list_generations(dir).await else {
        return;
    };
    let old_snapshots = snapshots.into_iter().filter(|g| *g < keep_from);
    let old_logs = logs.into_iter().filter(|g| *g < keep_from);
    let paths = old_snapshots
        .map(|g| snapshot_path(dir, g))
        .chain(old_logs.map(|g| log_path(dir, g)));
    for path in paths {
        if let Err(e) = glommio::io::remove(&path).await {
            tracing::warn!(path = %path.display(), error = %e, "could not remove an obsolete file");
        }
    }
}
