//! Snapshot files: written to a temporary name, synced, read back and checked before they
//! take their real name; and the removal of files two snapshots have made obsolete.

use std::path::{Path, PathBuf};

use glommio::io::{BufferedFile, OpenOptions};

use crate::log::{io_error, log_path, read_file, sync_dir};
use crate::MetaLogError;
use shoal_coordinator::state::CoordinatorState;

/// Bytes handed to one write, so no single write holds the whole image twice.
const WRITE_CHUNK_BYTES: usize = 8 << 20;

pub fn snapshot_path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("snapshot-{generation:020}.bin"))
}

/// Generations of the snapshots and logs present, each ascending.
pub async fn list_generations(dir: &Path) -> Result<(Vec<u64>, Vec<u64>), MetaLogError> {
    let dir_owned = dir.to_path_buf();
    glommio::executor()
        .spawn_blocking(move || {
            let mut snapshots = Vec::new();
            let mut logs = Vec::new();
            let entries = std::fs::read_dir(&dir_owned).map_err(|e| MetaLogError::Io {
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

pub async fn read_snapshot(dir: &Path, generation: u64) -> Result<CoordinatorState, MetaLogError> {
    let image = read_file(&snapshot_path(dir, generation)).await?;
    Ok(CoordinatorState::decode_snapshot(&image)?)
}

/// Writes the state as snapshot `generation`: to a temporary name, every byte written and
/// synced, then read back and compared with the image, and only then renamed into place. A
/// snapshot under its real name has been read back intact once.
pub async fn write_snapshot(
    dir: &Path,
    generation: u64,
    state: &CoordinatorState,
) -> Result<usize, MetaLogError> {
    let image = state.encode_snapshot();
    let path = snapshot_path(dir, generation);
    let tmp = path.with_extension("tmp");
    let written = write_and_verify(&tmp, &image).await;
    if let Err(e) = written {
        let _ = glommio::io::remove(&tmp).await;
        return Err(e);
    }
    glommio::io::rename(&tmp, &path)
        .await
        .map_err(|e| io_error(&path, e))?;
    sync_dir(dir).await?;
    Ok(image.len())
}

async fn write_and_verify(tmp: &Path, image: &[u8]) -> Result<(), MetaLogError> {
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .buffered_open(tmp)
        .await
        .map_err(|e| io_error(tmp, e))?;
    let mut written = 0;
    while written < image.len() {
        let end = image.len().min(written + WRITE_CHUNK_BYTES);
        let took = file
            .write_at(image[written..end].to_vec(), written as u64)
            .await
            .map_err(|e| io_error(tmp, e))?;
        if took == 0 {
            return Err(MetaLogError::Damaged(format!(
                "{} took no bytes at offset {written} (is the disk full?)",
                tmp.display()
            )));
        }
        written += took;
    }
    file.fdatasync().await.map_err(|e| io_error(tmp, e))?;
    file.close().await.map_err(|e| io_error(tmp, e))?;
    read_back_equals(tmp, image).await?;
    debug_assert!(
        CoordinatorState::decode_snapshot(image).is_ok(),
        "a snapshot image must decode"
    );
    Ok(())
}

/// Reads the file back a chunk at a time (no second copy of a large image) and compares it
/// with what was written.
async fn read_back_equals(path: &Path, image: &[u8]) -> Result<(), MetaLogError> {
    let file = BufferedFile::open(path)
        .await
        .map_err(|e| io_error(path, e))?;
    let outcome = async {
        let size = file.file_size().await.map_err(|e| io_error(path, e))?;
        let mut pos = 0;
        while size == image.len() as u64 && pos < image.len() {
            let want = WRITE_CHUNK_BYTES.min(image.len() - pos);
            let chunk = file
                .read_at(pos as u64, want)
                .await
                .map_err(|e| io_error(path, e))?;
            if chunk.is_empty() || chunk[..] != image[pos..pos + chunk.len()] {
                break;
            }
            pos += chunk.len();
        }
        if pos != image.len() || size != image.len() as u64 {
            return Err(MetaLogError::Damaged(format!(
                "{} does not read back as written: {size} bytes, the first {pos} of {} equal",
                path.display(),
                image.len()
            )));
        }
        Ok(())
    }
    .await;
    let _ = file.close().await;
    outcome
}

/// Removes what no recovery needs any more: snapshots older than the previous one, and logs
/// older than it. The previous snapshot and its logs stay, so a newest snapshot found damaged
/// later can be set aside without loss (`shoal repair`). Failures only cost disk.
pub async fn remove_obsolete(dir: &Path) {
    let Ok((snapshots, logs)) = list_generations(dir).await else {
        return;
    };
    let Some(&keep_from) = snapshots.iter().rev().nth(1) else {
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
