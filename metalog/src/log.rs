//! The durable metadata log: framed records appended with one fdatasync per group of commits.
//! The log is a series of generations, `metadata-<generation>.log`; a snapshot of generation
//! g holds the state of every log before g. Which bytes of a log are trusted is decided by
//! `recovery`; this file only opens, cuts and appends.

use std::path::{Path, PathBuf};

use glommio::io::{BufferedFile, Directory, OpenOptions};

use crate::MetaLogError;

const RECOVERY_READ_CHUNK_BYTES: usize = 8 << 20;
/// Space reserved ahead of the log's end (fallocate, size unchanged), so appends keep
/// working for a while after the disk fills with WAL objects.
const RESERVE_AHEAD_BYTES: u64 = 8 << 20;

pub fn log_path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("metadata-{generation:020}.log"))
}

pub struct MetadataLog {
    file: BufferedFile,
    path: PathBuf,
    generation: u64,
    end_bytes: u64,
    reserved_to: u64,
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
        if size > valid_bytes {
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
        file.fdatasync().await.map_err(|e| io_error(&path, e))?;
        sync_dir(dir).await?;
        let mut log = MetadataLog {
            file,
            path,
            generation,
            end_bytes: valid_bytes,
            reserved_to: 0,
        };
        log.reserve_ahead().await;
        Ok(log)
    }

    /// Appends already-framed records and makes them durable before returning. A short
    /// write is continued; an error leaves at most a torn tail for recovery to cut.
    pub async fn append_durable(&mut self, mut frames: Vec<u8>) -> Result<(), MetaLogError> {
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
        self.file
            .fdatasync()
            .await
            .map_err(|e| io_error(&self.path, e))?;
        if self.reserved_to < self.end_bytes + RESERVE_AHEAD_BYTES / 2 {
            self.reserve_ahead().await;
        }
        Ok(())
    }

    /// Best effort: without the reservation appends still work while the disk has room.
    async fn reserve_ahead(&mut self) {
        let target = self.end_bytes + RESERVE_AHEAD_BYTES;
        match self.file.pre_allocate(target, true).await {
            Ok(()) => self.reserved_to = target,
            Err(e) => {
                tracing::warn!(path = %self.path.display(), error = %e, "cannot reserve space for the metadata log (free disk space under data_dir)")
            }
        }
    }

    pub fn size_bytes(&self) -> u64 {
        self.end_bytes
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }
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
