//! The durable metadata log: framed records appended with one fdatasync per group of commits.
//! Opening it replays every whole record and truncates a torn tail.

use std::path::{Path, PathBuf};

use glommio::io::{BufferedFile, Directory, OpenOptions};

use crate::records::{decode_frames, Record};
use crate::CoordinatorError;

const LOG_FILE_NAME: &str = "metadata.log";
const RECOVERY_READ_CHUNK_BYTES: usize = 8 << 20;

pub struct MetadataLog {
    file: BufferedFile,
    path: PathBuf,
    end_bytes: u64,
}

impl MetadataLog {
    /// Opens (or creates) the log in `dir` and returns it with the records it holds.
    pub async fn open(dir: &Path) -> Result<(MetadataLog, Vec<Record>), CoordinatorError> {
        let path = dir.join(LOG_FILE_NAME);
        let io = |e: glommio::GlommioError<()>| CoordinatorError::Io {
            path: path.display().to_string(),
            source: e.into(),
        };
        std::fs::create_dir_all(dir).map_err(|e| CoordinatorError::Io {
            path: dir.display().to_string(),
            source: e,
        })?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .buffered_open(&path)
            .await
            .map_err(io)?;
        let size = file.file_size().await.map_err(io)?;
        let mut contents = Vec::with_capacity(size as usize);
        while (contents.len() as u64) < size {
            let want = RECOVERY_READ_CHUNK_BYTES.min((size - contents.len() as u64) as usize);
            let chunk = file
                .read_at(contents.len() as u64, want)
                .await
                .map_err(io)?;
            if chunk.is_empty() {
                break;
            }
            contents.extend_from_slice(&chunk);
        }
        let (records, valid_bytes) = decode_frames(&contents);
        if valid_bytes as u64 != size {
            tracing::warn!(
                path = %path.display(),
                valid_bytes,
                file_bytes = size,
                "metadata log has a torn or corrupt tail; truncating to the last whole record"
            );
            file.truncate(valid_bytes as u64).await.map_err(io)?;
        }
        file.fdatasync().await.map_err(io)?;
        let directory = Directory::open(dir).await.map_err(io)?;
        directory.sync().await.map_err(io)?;
        directory.close().await.map_err(io)?;
        let log = MetadataLog {
            file,
            path: path.clone(),
            end_bytes: valid_bytes as u64,
        };
        Ok((log, records))
    }

    /// Appends already-framed records and makes them durable before returning.
    pub async fn append_durable(&mut self, mut frames: Vec<u8>) -> Result<(), CoordinatorError> {
        let io = |e: glommio::GlommioError<()>| CoordinatorError::Io {
            path: self.path.display().to_string(),
            source: e.into(),
        };
        while !frames.is_empty() {
            let len = frames.len();
            let written = self
                .file
                .write_at(frames.clone(), self.end_bytes)
                .await
                .map_err(io)?;
            self.end_bytes += written as u64;
            if written == len {
                break;
            }
            frames.drain(..written);
        }
        self.file.fdatasync().await.map_err(io)
    }

    pub fn size_bytes(&self) -> u64 {
        self.end_bytes
    }
}
