//! One executor's appends to its segment file, committed in groups: puts that arrive while a
//! commit is in progress wait for it and are written together by the next one, with one
//! fdatasync for all of them.
//!
//! Order is what keeps a segment readable after a crash: a group is written only after the
//! group before it is durable, and if any write or sync of a group fails the segment is
//! sealed, so every acknowledged entry has only durable entries before it (see `entry`).

use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::SystemTime;

use futures::channel::oneshot;
use futures::lock::Mutex as AsyncMutex;
use glommio::io::{Directory, DmaBuffer, DmaFile, OpenOptions};

use super::poll_probe;
use glommio::Task;

use super::entry::{align_up, EntryHeader, MAX_KEY_BYTES};
use super::index::{Extent, SegmentIndex};
use crate::{ObjectBody, WalError};

struct Pending {
    key: String,
    header: EntryHeader,
    data: ObjectBody,
    done: oneshot::Sender<Result<(), WalError>>,
}

struct Active {
    id: u64,
    file: Rc<DmaFile>,
    /// Where the next entry goes.
    next: u64,
    capacity: u64,
}

type Prepared = Result<(u64, DmaFile), WalError>;

pub struct SegmentWriter {
    index: Arc<SegmentIndex>,
    segment_bytes: u64,
    /// The most one write of an entry holds, if any bound; a larger entry is written a part at
    /// a time.
    write_bytes: Option<u64>,
    pending: RefCell<Vec<Pending>>,
    active: RefCell<Option<Active>>,
    /// The next segment, being created and preallocated in the background while the active
    /// one fills: a group that rolls over then waits for no file creation or fsync of its own.
    spare: RefCell<Option<Task<Prepared>>>,
    /// Held by the put that is committing a group.
    committing: AsyncMutex<()>,
}

impl SegmentWriter {
    /// A writer appending entries to segments of `segment_bytes`, writing each whole or in
    /// parts of at most `write_bytes` (aligned) one after the other.
    pub fn new(
        index: Arc<SegmentIndex>,
        segment_bytes: u64,
        write_bytes: Option<u64>,
    ) -> SegmentWriter {
        SegmentWriter {
            index,
            segment_bytes,
            write_bytes: write_bytes.map(|bytes| align_up(bytes.max(1))),
            pending: RefCell::new(Vec::new()),
            active: RefCell::new(None),
            spare: RefCell::new(None),
            committing: AsyncMutex::new(()),
        }
    }

    /// Stores `data` under `key`; returns once it is on disk.
    pub async fn put(&self, key: &str, data: &ObjectBody) -> Result<(), WalError> {
        if key.len() > MAX_KEY_BYTES {
            return Err(WalError::Config(format!(
                "object key of {} bytes exceeds {MAX_KEY_BYTES}",
                key.len()
            )));
        }
        let header = EntryHeader {
            key: key.to_string(),
            data_len: data.len() as u64,
            written_at: SystemTime::now(),
        };
        let (done, outcome) = oneshot::channel();
        self.pending.borrow_mut().push(Pending {
            key: key.to_string(),
            header,
            data: data.clone(),
            done,
        });
        {
            // Whoever holds the lock commits everything pending, ours included unless the
            // holder before us already took it.
            let _committing = self.committing.lock().await;
            self.commit_pending().await;
        }
        outcome
            .await
            .unwrap_or_else(|_| Err(WalError::io(key, std::io::Error::other("commit abandoned"))))
    }

    async fn commit_pending(&self) {
        let mut group = std::mem::take(&mut *self.pending.borrow_mut());
        if group.is_empty() {
            return;
        }
        let mut abandoned = SealIfAbandoned {
            writer: self,
            armed: true,
        };
        let mut placed = Vec::with_capacity(group.len());
        // Segments this group filled: sealed once the group's objects are in the index, so a
        // segment is never reclaimed as empty while its entries are being written.
        let mut filled = Vec::new();
        let mut outcome = Ok(());
        for entry in &group {
            match self.reserve(entry.header.entry_len(), &mut filled).await {
                Ok(place) => placed.push(place),
                Err(e) => {
                    outcome = Err(e);
                    break;
                }
            }
        }
        let mut extents = Vec::with_capacity(group.len());
        let mut waiting = Vec::with_capacity(group.len());
        let mut writes = Vec::with_capacity(group.len());
        // Entries no place was found for (the disk full, say) are told why like the others,
        // not left to read a dropped answer as "commit abandoned".
        let unplaced = group.split_off(placed.len());
        for (entry, (segment, file, pos)) in group.into_iter().zip(placed.iter().cloned()) {
            let key = entry.key.clone();
            extents.push((
                entry.key,
                Extent {
                    segment,
                    data_offset: pos + entry.header.data_offset(),
                    len: entry.header.data_len,
                    written_at: entry.header.written_at,
                },
            ));
            waiting.push(entry.done);
            let part_bytes = self.write_bytes;
            writes.push(async move {
                // One part after the other, each laid out just before it is written: the
                // device's queue then never holds more than one part of a large entry ahead of
                // another lane's small write, and the copying is spread between the writes.
                let mut head = vec![0u8; entry.header.data_offset() as usize];
                entry.header.encode(&mut head);
                let total = entry.header.entry_len() as usize;
                let part_bytes = part_bytes.map_or(total, |bytes| bytes as usize);
                let mut offset = pos;
                for at in (0..total).step_by(part_bytes) {
                    let len = (total - at).min(part_bytes);
                    // The one copy of the object's bytes: into the aligned buffer the disk
                    // reads from.
                    let buffer = lay_out_part(&head, &entry.data, at, len);
                    let wanted = buffer.len();
                    let written = file
                        .write_at(buffer, offset)
                        .await
                        .map_err(|e| WalError::io(&key, e))?;
                    if written != wanted {
                        return Err(WalError::ShortWrite {
                            key,
                            offset,
                            wanted,
                            written,
                        });
                    }
                    offset += wanted as u64;
                }
                Ok(())
            });
        }
        waiting.extend(unplaced.into_iter().map(|entry| entry.done));
        if outcome.is_ok() {
            outcome = futures::future::join_all(writes)
                .await
                .into_iter()
                .collect();
        } else {
            drop(writes);
        }
        if outcome.is_ok() {
            outcome = self.sync(&placed).await;
        }
        // Durable, or failed and sealed below: a drop from here on leaves no gap behind.
        abandoned.armed = false;
        match outcome {
            Ok(()) => {
                let emptied = self.index.insert(extents);
                remove_files(emptied).await;
                for done in waiting {
                    let _ = done.send(Ok(()));
                }
                self.seal(filled).await;
            }
            Err(e) => {
                // Nothing after a failed write may be acknowledged in this segment.
                filled.extend(self.active.borrow_mut().take());
                self.seal(filled).await;
                let message = e.to_string();
                let mut first = Some(e);
                for done in waiting.into_iter() {
                    let error = first.take().unwrap_or_else(|| {
                        WalError::io("segment", std::io::Error::other(message.clone()))
                    });
                    let _ = done.send(Err(error));
                }
            }
        }
    }

    /// fdatasync of every segment the group touched (two when it filled one).
    async fn sync(&self, placed: &[(u64, Rc<DmaFile>, u64)]) -> Result<(), WalError> {
        let mut synced: Vec<u64> = Vec::new();
        for (segment, file, _) in placed {
            if synced.contains(segment) {
                continue;
            }
            file.fdatasync().await.map_err(|e| {
                WalError::io(&self.index.segment_path(*segment).display().to_string(), e)
            })?;
            synced.push(*segment);
        }
        Ok(())
    }

    /// A place for `len` bytes: the active segment's next position, or a new segment's start
    /// (the full one moved to `filled`).
    async fn reserve(
        &self,
        len: u64,
        filled: &mut Vec<Active>,
    ) -> Result<(u64, Rc<DmaFile>, u64), WalError> {
        {
            let mut active = self.active.borrow_mut();
            if let Some(segment) = active.as_mut() {
                if segment.next + len <= segment.capacity {
                    let pos = segment.next;
                    segment.next += len;
                    return Ok((segment.id, segment.file.clone(), pos));
                }
            }
        }
        filled.extend(self.active.borrow_mut().take());
        let capacity = self.segment_bytes.max(len);
        let spare = self.spare.borrow_mut().take();
        let prepared = match spare {
            // An object larger than a segment gets one of its own size; the spare waits.
            Some(task) if capacity > self.segment_bytes => {
                *self.spare.borrow_mut() = Some(task);
                create_segment(self.index.clone(), capacity).await
            }
            Some(task) => match task.await {
                Ok(prepared) => Ok(prepared),
                Err(e) => {
                    tracing::warn!(error = %e, "could not prepare the next segment ahead; creating it now");
                    create_segment(self.index.clone(), capacity).await
                }
            },
            None => create_segment(self.index.clone(), capacity).await,
        };
        let (id, file) = prepared?;
        if self.spare.borrow().is_none() {
            let (index, bytes) = (self.index.clone(), self.segment_bytes);
            *self.spare.borrow_mut() = Some(glommio::spawn_local(create_segment(index, bytes)));
        }
        let file = Rc::new(file);
        *self.active.borrow_mut() = Some(Active {
            id,
            file: file.clone(),
            next: len,
            capacity,
        });
        Ok((id, file, 0))
    }

    /// No more appends to these segments; each is deleted if none of its objects is left.
    async fn seal(&self, segments: Vec<Active>) {
        for segment in segments {
            if let Some(empty) = self.index.seal(segment.id) {
                remove_files(vec![empty]).await;
            }
            if let Ok(file) = Rc::try_unwrap(segment.file) {
                let _ = file.close().await;
            }
        }
    }
}

/// `len` bytes from `at` of the entry made of `head` (header and key), `data` and zero
/// padding, in a buffer for a direct write.
fn lay_out_part(head: &[u8], data: &ObjectBody, at: usize, len: usize) -> DmaBuffer {
    let mut buffer = glommio::allocate_dma_buffer(len);
    let bytes = buffer.as_bytes_mut();
    let end = at + len;
    let head_bytes = head.len().saturating_sub(at).min(len);
    if head_bytes > 0 {
        bytes[..head_bytes].copy_from_slice(&head[at..at + head_bytes]);
    }
    // The part of `data` this buffer holds (entry positions), then the padding.
    let (from, to) = (at.max(head.len()), end.min(head.len() + data.len()));
    let filled = if from < to {
        data.copy_to(from - head.len(), &mut bytes[from - at..to - at]);
        to - at
    } else {
        head_bytes
    };
    bytes[filled..].fill(0);
    buffer
}

/// A preallocated segment file whose name is durable in its directory. A file left by a
/// creation that did not finish (a crash, a writer dropped meanwhile) holds no entry and is
/// deleted when the store next opens.
async fn create_segment(index: Arc<SegmentIndex>, capacity: u64) -> Prepared {
    let dir = index.dir().to_path_buf();
    let id = index.new_segment();
    let path = index.segment_path(id);
    let name = path.display().to_string();
    poll_probe::probe_once(&dir).await;
    let file = open_new(&path).await.map_err(|e| WalError::io(&name, e))?;
    let prepared = async {
        file.pre_allocate(capacity, false)
            .await
            .map_err(|e| WalError::io(&name, e))?;
        file.fdatasync().await.map_err(|e| WalError::io(&name, e))?;
        let directory = Directory::open(&dir)
            .await
            .map_err(|e| WalError::io(&name, e))?;
        directory.sync().await.map_err(|e| WalError::io(&name, e))?;
        directory.close().await.map_err(|e| WalError::io(&name, e))
    }
    .await;
    if let Err(e) = prepared {
        let _ = file.close().await;
        let _ = glommio::io::remove(&path).await;
        index.seal(id);
        return Err(e);
    }
    Ok((id, file))
}

/// Seals the active segment when a group's commit is dropped (its put cancelled) before its
/// writes are known to be durable: the places it reserved may never be written, and a later
/// group appended after such a gap would be hidden from the start-up scan, acknowledged or not.
/// The sealed file is left as it is (no await here): its entries are read at the next open,
/// and objects nobody committed are collected as orphans.
struct SealIfAbandoned<'a> {
    writer: &'a SegmentWriter,
    armed: bool,
}

impl Drop for SealIfAbandoned<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        // No borrow of `active` is held across an await, so none is held while dropping.
        if let Some(active) = self.writer.active.borrow_mut().take() {
            let _ = self.writer.index.seal(active.id);
            tracing::warn!(
                segment = %self.writer.index.segment_path(active.id).display(),
                "a segment write was abandoned mid-group; the segment is sealed"
            );
        }
    }
}

async fn open_new(path: &PathBuf) -> glommio::Result<DmaFile, ()> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .dma_open(path)
        .await
}

/// Deletes the files of segments that hold no object any more.
pub async fn remove_files(paths: Vec<PathBuf>) {
    for path in paths {
        if let Err(e) = glommio::io::remove(&path).await {
            tracing::warn!(segment = %path.display(), error = %e, "could not delete an empty segment");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_laid_out_one_by_one_make_the_whole_entry() {
        glommio::LocalExecutorBuilder::default()
            .io_memory(1 << 20)
            .spawn(|| async {
                let head: Vec<u8> = (0..40u8).collect();
                let data: Vec<u8> = (0..9000u32).map(|i| (i % 251) as u8 + 1).collect();
                let total = 12288;
                let mut whole = head.clone();
                whole.extend_from_slice(&data);
                whole.resize(total, 0);
                // The data in pieces of uneven sizes, as a produced object's batches are.
                let mut body = ObjectBody::default();
                let mut from = 0;
                for size in [1, 4095, 7, 3000, 1897] {
                    body.push(bytes::Bytes::copy_from_slice(&data[from..from + size]));
                    from += size;
                }
                assert_eq!(from, data.len());
                // Parts smaller than the head, cutting the data, and holding only padding.
                for part in [16, 4096, 5000, total] {
                    let mut made = Vec::new();
                    for at in (0..total).step_by(part) {
                        let len = (total - at).min(part);
                        made.extend_from_slice(lay_out_part(&head, &body, at, len).as_bytes());
                    }
                    assert_eq!(made, whole, "parts of {part}");
                }
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
