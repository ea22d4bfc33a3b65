//! The durable metadata log: framed records appended with one fdatasync per group of commits.
//! The log is a series of generations, `metadata-<generation>.log`; a snapshot of generation
//! g holds the state of every log before g. Which bytes of a log are trusted is decided by
//! `recovery`; this file only opens, cuts and appends.

use std::path::{Path, PathBuf};

use glommio::io::{BufferedFile, Directory, OpenOptions};

use crate::MetaLogError;

const RECOVERY_READ_CHUNK_BYTES: usize = 8 << 20;
/// Zeros written ahead of the log's end. An append then overwrites blocks the file already
/// has, so its fdatasync writes the data alone: appending past the end (or into fallocated,
/// unwritten space) made every fdatasync also commit the inode's new size or extent, about
/// 250 µs instead of 85 on the test machine (issue 63). The zeros also keep appends working
/// for a while after the disk fills with WAL objects. Recovery reads a tail of zeros after
/// the last frame as the log's end (`shoal_coordinator::frames`).
const ZEROS_AHEAD_BYTES: u64 = 8 << 20;
/// Zeros are added in steps this large, written with the append that needs them and made
/// durable by its fdatasync: a short pause once per step of log, not one per append.
const ZEROS_STEP_BYTES: u64 = 1 << 20;

pub fn log_path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("metadata-{generation:020}.log"))
}

pub struct MetadataLog {
    file: BufferedFile,
    path: PathBuf,
    generation: u64,
    end_bytes: u64,
    /// The file's size: the bytes from `end_bytes` up to it are written zeros.
    zeroed_to: u64,
}

impl MetadataLog {
    /// Opens one generation of the log to append after its first `valid_bytes`, cutting off
    /// whatever follows them (recovery has judged it a torn tail). Creates the file if absent.
    pub async fn open_for_append(
        dir: &Path,
        generation: u64,
        valid_bytes: u64,
    ) -> Result<MetadataLog, MetaLogError> {
        let path = log_path(dir, generation);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .buffered_open(&path)
            .await
            .map_err(|e| io_error(&path, e))?;
        let size = file.file_size().await.map_err(|e| io_error(&path, e))?;
        if size < valid_bytes {
            return Err(MetaLogError::Damaged(format!(
                "{} shrank to {size} bytes while it was being opened",
                path.display()
            )));
        }
        let zeroed_tail = size > valid_bytes && only_zeros(&file, valid_bytes, size, &path).await?;
        if size > valid_bytes && !zeroed_tail {
            tracing::warn!(
                path = %path.display(),
                valid_bytes,
                dropped_bytes = size - valid_bytes,
                "cutting the torn tail of an interrupted append off the metadata log"
            );
            file.truncate(valid_bytes)
                .await
                .map_err(|e| io_error(&path, e))?;
        }
        let mut log = MetadataLog {
            file,
            path,
            generation,
            end_bytes: valid_bytes,
            zeroed_to: if zeroed_tail { size } else { valid_bytes },
        };
        log.write_zeros_ahead(valid_bytes).await;
        log.file
            .fdatasync()
            .await
            .map_err(|e| io_error(&log.path, e))?;
        sync_dir(dir).await?;
        Ok(log)
    }

    /// Appends already-framed records and makes them durable before returning. A short
    /// write is continued; an error leaves at most a torn tail for recovery to cut.
    pub async fn append_durable(&mut self, mut frames: Vec<u8>) -> Result<(), MetaLogError> {
        let end_after = self.end_bytes + frames.len() as u64;
        while !frames.is_empty() {
            let len = frames.len();
            let written = self
                .file
                .write_at(frames.clone(), self.end_bytes)
                .await
                .map_err(|e| io_error(&self.path, e))?;
            if written == 0 {
                return Err(MetaLogError::Io {
                    path: self.path.display().to_string(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::WriteZero,
                        "the metadata log took no bytes",
                    ),
                });
            }
            self.end_bytes += written as u64;
            if written == len {
                break;
            }
            frames.drain(..written);
        }
        if self.zeroed_to < end_after + ZEROS_AHEAD_BYTES - ZEROS_STEP_BYTES {
            self.write_zeros_ahead(end_after).await;
        }
        self.file
            .fdatasync()
            .await
            .map_err(|e| io_error(&self.path, e))
    }

    /// Writes zeros from the end of what is zeroed (or `end`, past it) to `ZEROS_AHEAD_BYTES`
    /// beyond `end`; durable with the next fdatasync. Best effort: without them appends
    /// still work while the disk has room, only slower.
    async fn write_zeros_ahead(&mut self, end: u64) {
        let from = self.zeroed_to.max(end);
        let to = end + ZEROS_AHEAD_BYTES;
        if from >= to {
            return;
        }
        let zeros = vec![0u8; (to - from) as usize];
        match self.file.write_at(zeros, from).await {
            // A short write leaves fewer zeros, each still a zero.
            Ok(written) => self.zeroed_to = from + written as u64,
            Err(e) => {
                tracing::warn!(path = %self.path.display(), error = %e, "cannot write zeros ahead of the metadata log's end (free disk space under data_dir)")
            }
        }
    }

    /// Cuts the zeros off a log no longer appended to (a snapshot started the next one).
    /// Best effort: zeros left there read as its end.
    pub async fn seal(self) {
        if let Err(e) = self.file.truncate(self.end_bytes).await {
            tracing::warn!(path = %self.path.display(), error = %e, "cannot cut the zeros off a finished metadata log");
        }
        let _ = self.file.close().await;
    }

    pub fn size_bytes(&self) -> u64 {
        self.end_bytes
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }
}

/// Whether the file's bytes from `from` to `to` are all zeros.
async fn only_zeros(
    file: &BufferedFile,
    from: u64,
    to: u64,
    path: &Path,
) -> Result<bool, MetaLogError> {
    let mut at = from;
    while at < to {
        let want = RECOVERY_READ_CHUNK_BYTES.min((to - at) as usize);
        let chunk = file
            .read_at(at, want)
            .await
            .map_err(|e| io_error(path, e))?;
        if chunk.is_empty() {
            return Ok(true);
        }
        if chunk.iter().any(|&b| b != 0) {
            return Ok(false);
        }
        at += chunk.len() as u64;
    }
    Ok(true)
}

/// The whole of a file, read in chunks.
pub async fn read_file(path: &Path) -> Result<Vec<u8>, MetaLogError> {
    let file = BufferedFile::open(path)
        .await
        .map_err(|e| io_error(path, e))?;
    let contents = read_all(&file, path).await;
    let _ = file.close().await;
    contents
}

async fn read_all(file: &BufferedFile, path: &Path) -> Result<Vec<u8>, MetaLogError> {
    let size = file.file_size().await.map_err(|e| io_error(path, e))?;
    let mut contents = Vec::with_capacity(size as usize);
    while (contents.len() as u64) < size {
        let want = RECOVERY_READ_CHUNK_BYTES.min((size - contents.len() as u64) as usize);
        let chunk = file
            .read_at(contents.len() as u64, want)
            .await
            .map_err(|e| io_error(path, e))?;
        if chunk.is_empty() {
            break;
        }
        contents.extend_from_slice(&chunk);
    }
    Ok(contents)
}

pub async fn sync_dir(dir: &Path) -> Result<(), MetaLogError> {
    let directory = Directory::open(dir).await.map_err(|e| io_error(dir, e))?;
    directory.sync().await.map_err(|e| io_error(dir, e))?;
    directory.close().await.map_err(|e| io_error(dir, e))
}

pub fn io_error(path: &Path, e: glommio::GlommioError<()>) -> MetaLogError {
    MetaLogError::Io {
        path: path.display().to_string(),
        source: e.into(),
    }
}
