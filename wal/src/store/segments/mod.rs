//! The segment layout of the local store: objects appended to large preallocated segment
//! files with O_DIRECT writes (glommio DMA files), each object an extent found through an
//! in-memory index that is rebuilt from the segments' entry headers at startup. No file is
//! created per object, no byte is copied into the page cache on the way to disk, and one
//! fdatasync covers every put that arrived while the previous one ran.

mod direct_io;
mod entry;
mod index;
mod open_files;
mod poll_probe;
mod writer;

use std::path::Path;
use std::sync::Arc;

use index::Extent;
pub use index::SegmentIndex;
use open_files::OpenFiles;
use writer::{remove_files, SegmentWriter};

use super::kinds::{ListedObject, WriteLane};
use super::read_bytes::{exact_range, short_object, ReadBytes};
use crate::{ObjectBody, WalError};

/// The most one write of a background object holds (`WriteLane` says why): with its own
/// segments alone, a 32 MiB object written at once still held produce's p99 at 44-48 ms.
const BACKGROUND_WRITE_BYTES: u64 = 1 << 20;

/// The directory under the store's root that holds segment files.
pub const SEGMENTS_DIR: &str = "segments";

/// One executor's handle on the segments: reads and deletes always (a store written with
/// segments stays readable with either layout), appends when `segment_bytes` is given.
pub struct Segments {
    /// None when this store writes no segments and found none: the file layout's reads then
    /// take no lock shared between executors.
    index: Option<Arc<SegmentIndex>>,
    /// Appends for each `WriteLane`: produce's, then background work's.
    writers: Option<[SegmentWriter; 2]>,
    /// Segment files this executor keeps open for reading.
    open_files: OpenFiles,
}

impl Segments {
    pub fn open(root: &Path, segment_bytes: Option<u64>) -> Result<Segments, WalError> {
        let dir = root.join(SEGMENTS_DIR);
        if segment_bytes.is_some() {
            // Once, while the store opens (as the root itself is made), not on the put path.
            std::fs::create_dir_all(&dir)
                .map_err(|e| WalError::io(&dir.display().to_string(), e))?;
        }
        let index = SegmentIndex::open(&dir)?;
        let writers = segment_bytes
            .filter(|_| index.takes_direct_io())
            .map(|bytes| {
                let bytes = entry::align_up(bytes);
                [
                    SegmentWriter::new(index.clone(), bytes, None),
                    SegmentWriter::new(index.clone(), bytes, Some(BACKGROUND_WRITE_BYTES)),
                ]
            });
        let index = (writers.is_some() || !index.is_empty()).then_some(index);
        Ok(Segments {
            index,
            writers,
            open_files: OpenFiles::default(),
        })
    }

    /// The index and `key`'s extent, when a segment holds `key`.
    fn lookup(&self, key: &str) -> Option<(&SegmentIndex, Extent)> {
        let index = self.index.as_deref()?;
        Some((index, index.lookup(key)?))
    }

    /// Whether puts go to segments.
    pub fn writes(&self) -> bool {
        self.writers.is_some()
    }

    #[cfg(test)]
    pub async fn put(&self, key: &str, data: impl Into<ObjectBody>) -> Result<(), WalError> {
        self.put_in(WriteLane::Produce, key, &data.into()).await
    }

    pub async fn put_in(
        &self,
        lane: WriteLane,
        key: &str,
        data: &ObjectBody,
    ) -> Result<(), WalError> {
        self.close_reclaimed();
        let lane = match lane {
            WriteLane::Produce => 0,
            WriteLane::Background => 1,
        };
        match &self.writers {
            Some(writers) => writers[lane].put(key, data).await,
            None => Err(WalError::Config(
                "this store does not write segments".to_string(),
            )),
        }
    }

    /// The range, or None when no segment holds `key`.
    #[cfg(test)]
    pub async fn get_range(
        &self,
        key: &str,
        offset: u64,
        len: usize,
    ) -> Result<Option<bytes::Bytes>, WalError> {
        Ok(self
            .read_range(key, offset, len)
            .await?
            .map(|read| read.to_bytes()))
    }

    /// `len` bytes at `offset` of `key`, in the direct read's own buffer; None when no
    /// segment holds `key`.
    pub async fn read_range(
        &self,
        key: &str,
        offset: u64,
        len: usize,
    ) -> Result<Option<ReadBytes>, WalError> {
        self.close_reclaimed();
        let Some((index, extent)) = self.lookup(key) else {
            return Ok(None);
        };
        if offset + len as u64 > extent.len {
            return Err(short_object(key, offset, len));
        }
        let path = index.segment_path(extent.segment);
        // Direct reads, as the writes are: the bytes are not in the page cache, and filling it
        // cost more CPU than the read itself (each new page zeroed, then copied out again).
        let file = self.open_files.open(extent.segment, &path, key).await?;
        let data = file
            .read_at(extent.data_offset + offset, len)
            .await
            .map_err(|e| WalError::io(&path.display().to_string(), e))?;
        exact_range(key, offset, len, data).map(Some)
    }

    /// Closes the files of segments reclaimed since this handle last looked (`OpenFiles`).
    fn close_reclaimed(&self) {
        if let Some(index) = &self.index {
            self.open_files.close_reclaimed(index);
        }
    }

    /// Where `key`'s bytes lie on disk, for messages about damage: "FILE at byte N".
    pub fn location(&self, key: &str) -> Option<String> {
        let (index, extent) = self.lookup(key)?;
        let path = index.segment_path(extent.segment);
        Some(format!("{} at byte {}", path.display(), extent.data_offset))
    }

    pub fn size(&self, key: &str) -> Option<u64> {
        self.lookup(key).map(|(_, extent)| extent.len)
    }

    /// Forgets `key`; returns whether a segment held it. A segment's file is deleted with the
    /// last of its objects. The entry itself stays in the file until then: after a restart a
    /// deleted object can reappear, unreferenced, and is collected again as an orphan.
    pub async fn delete(&self, key: &str) -> bool {
        let Some(index) = &self.index else {
            return false;
        };
        let (found, emptied) = index.remove(key);
        self.close_reclaimed();
        remove_files(emptied.into_iter().collect()).await;
        found
    }

    pub fn list(&self, prefix: &str) -> Vec<ListedObject> {
        self.close_reclaimed();
        self.index
            .as_ref()
            .map_or_else(Vec::new, |index| index.list(prefix))
    }
}

#[cfg(test)]
mod tests;
