//! The segment files one executor keeps open for reading. Each read would otherwise open and
//! close its segment's file: two more trips through io_uring, each waiting behind whatever the
//! executor is busy with (measured: a consumer catching up waited on them between fetches).
//!
//! A file stays open after its segment is reclaimed until this executor's handle next looks
//! (its next read, write, delete or listing): until then the file's space is not freed.

use std::cell::{Cell, RefCell};
use std::path::Path;
use std::rc::Rc;

use glommio::io::DmaFile;

use super::index::SegmentIndex;
use crate::WalError;

/// Segment files one executor keeps open.
const OPEN_FILES_MAX: usize = 16;

#[derive(Default)]
pub struct OpenFiles {
    /// By segment, the most recently used last.
    files: RefCell<Vec<(u64, Rc<DmaFile>)>>,
    /// The index's reclaimed count when `files` was last pruned.
    pruned_at: Cell<u64>,
}

impl OpenFiles {
    /// Closes the files of segments reclaimed (by any executor) since the last look: a cheap
    /// atomic read unless something was reclaimed.
    pub fn close_reclaimed(&self, index: &SegmentIndex) {
        let reclaimed = index.reclaimed();
        if reclaimed != self.pruned_at.get() {
            self.pruned_at.set(reclaimed);
            self.files
                .borrow_mut()
                .retain(|(id, _)| index.holds_segment(*id));
        }
    }

    /// The segment's file, open for reading: kept from an earlier read, or opened now (`key`
    /// names the object read, for the error when the file is gone).
    pub async fn open(
        &self,
        segment: u64,
        path: &Path,
        key: &str,
    ) -> Result<Rc<DmaFile>, WalError> {
        if let Some(file) = self.kept(segment) {
            return Ok(file);
        }
        let file = Rc::new(DmaFile::open(path).await.map_err(|e| {
            let io: std::io::Error = e.into();
            if io.kind() == std::io::ErrorKind::NotFound {
                WalError::NotFound(key.to_string()) // deleted since the lookup
            } else {
                WalError::io(&path.display().to_string(), io)
            }
        })?);
        let mut files = self.files.borrow_mut();
        // Another read may have opened it meanwhile.
        if !files.iter().any(|(id, _)| *id == segment) {
            if files.len() >= OPEN_FILES_MAX {
                files.remove(0); // closed once its reads in flight end
            }
            files.push((segment, file.clone()));
        }
        Ok(file)
    }

    fn kept(&self, segment: u64) -> Option<Rc<DmaFile>> {
        let mut files = self.files.borrow_mut();
        let at = files.iter().position(|(id, _)| *id == segment)?;
        let entry = files.remove(at);
        let file = entry.1.clone();
        files.push(entry);
        Some(file)
    }

    /// How many files are open.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.files.borrow().len()
    }
}
