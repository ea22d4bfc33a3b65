//! The durable metadata log: framed records appended with one fdatasync per group of commits.
//! The log is a series of generations, `metadata-<generation>.log`; a snapshot of generation
//! g holds the state of every log before g, so logs older than the newest snapshot can go.

use std::path::{Path, PathBuf};

use glommio::io::{BufferedFile, Directory, OpenOptions};

use crate::records::{decode_frames, Record};
use crate::CoordinatorError;

const RECOVERY_READ_CHUNK_BYTES: usize = 8 << 20;

pub fn log_path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("metadata-{generation:020}.log"))
}

pub struct MetadataLog {
    file: BufferedFile,
    path: PathBuf,
    generation: u64,
    end_bytes: u64,
}

impl MetadataLog {
    /// Opens (or creates) one generation of the log and returns it with its whole records.
    /// A torn or corrupt tail is truncated away.
    pub async fn open(
        dir: &Path,
        generation: u64,
    ) -> Result<(MetadataLog, Vec<Record>), CoordinatorError> {
        let path = log_path(dir, generation);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .buffered_open(&path)
            .await
            .map_err(|e| io_error(&path, e))?;
        let contents = read_all(&file, &path).await?;
        let (records, valid_bytes) = decode_frames(&contents);
        if valid_bytes != contents.len() {
            tracing::warn!(
                path = %path.display(),
                valid_bytes,
                file_bytes = contents.len(),
                "metadata log has a torn or corrupt tail; truncating to the last whole record"
            );
            file.truncate(valid_bytes as u64)
                .await
                .map_err(|e| io_error(&path, e))?;
        }
        file.fdatasync().await.map_err(|e| io_error(&path, e))?;
        sync_dir(dir).await?;
        let log = MetadataLog {
            file,
            path,
            generation,
            end_bytes: valid_bytes as u64,
        };
        Ok((log, records))
    }

    /// Appends already-framed records and makes them durable before returning.
    pub async fn append_durable(&mut self, mut frames: Vec<u8>) -> Result<(), CoordinatorError> {
        while !frames.is_empty() {
            let len = frames.len();
            let written = self
                .file
                .write_at(frames.clone(), self.end_bytes)
                .await
                .map_err(|e| io_error(&self.path, e))?;
            self.end_bytes += written as u64;
            if written == len {
                break;
            }
            frames.drain(..written);
        }
        self.file
            .fdatasync()
            .await
            .map_err(|e| io_error(&self.path, e))
    }

    pub fn size_bytes(&self) -> u64 {
        self.end_bytes
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }
}

pub async fn read_all(file: &BufferedFile, path: &Path) -> Result<Vec<u8>, CoordinatorError> {
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

pub async fn sync_dir(dir: &Path) -> Result<(), CoordinatorError> {
    let directory = Directory::open(dir).await.map_err(|e| io_error(dir, e))?;
    directory.sync().await.map_err(|e| io_error(dir, e))?;
    directory.close().await.map_err(|e| io_error(dir, e))
}

pub fn io_error(path: &Path, e: glommio::GlommioError<()>) -> CoordinatorError {
    CoordinatorError::Io {
        path: path.display().to_string(),
        source: e.into(),
    }
}
