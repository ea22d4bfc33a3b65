//! Where each object of the segment layout lies, shared by every executor of the process:
//! built once per store root by reading the segments' headers, then kept up to date by the
//! writers (after their entries are durable) and by deletes. Reclaims a sealed segment's file
//! once none of its objects is left.
//!
//! The lock is a std mutex held for map updates only, never across an `.await`.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::SystemTime;

use super::entry::{EntryHeader, ALIGNMENT};
use crate::store::kinds::ListedObject;
use crate::WalError;

const SEGMENT_SUFFIX: &str = ".seg";

/// An object's bytes: `len` bytes at `data_offset` in segment `segment`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    pub segment: u64,
    pub data_offset: u64,
    pub len: u64,
    pub written_at: SystemTime,
}

#[derive(Debug, Default)]
struct SegmentInfo {
    /// Objects of this segment still in the index.
    live: usize,
    /// No writer appends to it any more (every segment found at startup is sealed).
    sealed: bool,
}

#[derive(Debug, Default)]
struct IndexState {
    objects: HashMap<String, Extent>,
    segments: HashMap<u64, SegmentInfo>,
    next_segment: u64,
    /// Segment files found holding no entry (created, never written: a crash or a writer
    /// dropped while preparing one). Deleted by the first writer's first insert, never by a
    /// reader such as `shoal check`, which may look while the broker prepares a segment.
    empty_at_open: Vec<PathBuf>,
}

#[derive(Debug)]
pub struct SegmentIndex {
    dir: PathBuf,
    state: Mutex<IndexState>,
    /// Whether `dir`'s file system takes O_DIRECT writes, probed by the first writer to ask.
    direct_io: OnceLock<bool>,
    /// Segments reclaimed so far: readers holding segment files open close those of
    /// reclaimed segments when this moves (their disk space is freed only then).
    reclaimed: AtomicU64,
}

/// One index per segments directory in this process, so that every executor's store handle
/// sees the others' objects.
fn registry() -> &'static Mutex<HashMap<PathBuf, Weak<SegmentIndex>>> {
    static REGISTRY: OnceLock<Mutex<HashMap<PathBuf, Weak<SegmentIndex>>>> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

impl SegmentIndex {
    /// The index of `dir`, read from its segments the first time this process opens it.
    /// Reading uses blocking file reads: it happens once, while the broker starts.
    pub fn open(dir: &Path) -> Result<Arc<SegmentIndex>, WalError> {
        let mut registry = registry().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(index) = registry.get(dir).and_then(Weak::upgrade) {
            return Ok(index);
        }
        let index = Arc::new(SegmentIndex {
            dir: dir.to_path_buf(),
            state: Mutex::new(scan(dir)?),
            direct_io: OnceLock::new(),
            reclaimed: AtomicU64::new(0),
        });
        registry.insert(dir.to_path_buf(), Arc::downgrade(&index));
        Ok(index)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether segments can be written here: probed once for every executor of the process
    /// (a blocking write of one block, while the store opens), and warned about once.
    pub fn takes_direct_io(&self) -> bool {
        *self.direct_io.get_or_init(|| match super::direct_io::probe(&self.dir) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(dir = %self.dir.display(), error = %e, "the file system here does not take O_DIRECT writes (tmpfs on old kernels, some FUSE and network file systems): objects are written one file each instead of in segments");
                false
            }
        })
    }

    /// Whether any segment or object is known here (empty files found at open aside).
    pub fn is_empty(&self) -> bool {
        let state = self.state();
        state.objects.is_empty() && state.segments.is_empty()
    }

    pub fn segment_path(&self, segment: u64) -> PathBuf {
        segment_path(&self.dir, segment)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, IndexState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn lookup(&self, key: &str) -> Option<Extent> {
        self.state().objects.get(key).copied()
    }

    /// How many segments have been reclaimed in this process (a count that only rises).
    pub fn reclaimed(&self) -> u64 {
        self.reclaimed.load(Ordering::Acquire)
    }

    /// Whether `segment` is still in use (not reclaimed).
    pub fn holds_segment(&self, segment: u64) -> bool {
        self.state().segments.contains_key(&segment)
    }

    fn count_reclaimed(&self, segments: usize) {
        if segments > 0 {
            self.reclaimed.fetch_add(segments as u64, Ordering::Release);
        }
    }

    /// A number for a new segment, unused by any file this process has seen.
    pub fn new_segment(&self) -> u64 {
        let mut state = self.state();
        let id = state.next_segment;
        state.next_segment += 1;
        state.segments.insert(id, SegmentInfo::default());
        id
    }

    /// Records durable objects. Returns the files of segments that no longer hold any (an
    /// object written again under its key leaves its older copy's segment; empty files
    /// found at open).
    pub fn insert(&self, objects: Vec<(String, Extent)>) -> Vec<PathBuf> {
        let mut state = self.state();
        let mut emptied = std::mem::take(&mut state.empty_at_open);
        for (key, extent) in objects {
            state.segments.entry(extent.segment).or_default().live += 1;
            if let Some(old) = state.objects.insert(key, extent) {
                emptied.extend(release(&mut state, &self.dir, old.segment));
            }
        }
        self.count_reclaimed(emptied.len());
        emptied
    }

    /// Forgets `key`; returns whether it was here, and the file of its segment when that
    /// segment is sealed and now holds nothing.
    pub fn remove(&self, key: &str) -> (bool, Option<PathBuf>) {
        let mut state = self.state();
        match state.objects.remove(key) {
            Some(extent) => {
                let emptied = release(&mut state, &self.dir, extent.segment);
                self.count_reclaimed(emptied.iter().count());
                (true, emptied)
            }
            None => (false, None),
        }
    }

    /// No more appends to `segment`; returns its file when it holds nothing.
    pub fn seal(&self, segment: u64) -> Option<PathBuf> {
        let mut state = self.state();
        let info = state.segments.entry(segment).or_default();
        info.sealed = true;
        if info.live == 0 {
            state.segments.remove(&segment);
            self.count_reclaimed(1);
            return Some(segment_path(&self.dir, segment));
        }
        None
    }

    /// Objects directly under `prefix` (keys `prefix/name`).
    pub fn list(&self, prefix: &str) -> Vec<ListedObject> {
        let state = self.state();
        let start = format!("{prefix}/");
        state
            .objects
            .iter()
            .filter(|(key, _)| {
                key.strip_prefix(&start)
                    .is_some_and(|name| !name.contains('/'))
            })
            .map(|(key, extent)| ListedObject {
                key: key.clone(),
                modified: extent.written_at,
            })
            .collect()
    }
}

fn release(state: &mut IndexState, dir: &Path, segment: u64) -> Option<PathBuf> {
    let info = state.segments.get_mut(&segment)?;
    info.live = info.live.saturating_sub(1);
    if info.live == 0 && info.sealed {
        state.segments.remove(&segment);
        return Some(segment_path(dir, segment));
    }
    None
}

pub fn segment_path(dir: &Path, segment: u64) -> PathBuf {
    dir.join(format!("{segment:020}{SEGMENT_SUFFIX}"))
}

/// Reads every segment's entries in segment order, so that a key written twice resolves to
/// its later copy.
fn scan(dir: &Path) -> Result<IndexState, WalError> {
    let name = dir.display().to_string();
    let mut ids = Vec::new();
    match std::fs::read_dir(dir) {
        Ok(entries) => {
            for entry in entries {
                let entry = entry.map_err(|e| WalError::io(&name, e))?;
                let file_name = entry.file_name();
                let Some(id) = file_name
                    .to_str()
                    .and_then(|n| n.strip_suffix(SEGMENT_SUFFIX))
                    .and_then(|n| n.parse::<u64>().ok())
                else {
                    continue;
                };
                ids.push(id);
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(WalError::io(&name, e)),
    }
    ids.sort_unstable();
    let mut state = IndexState {
        next_segment: ids.last().map_or(0, |last| last + 1),
        ..Default::default()
    };
    for id in ids {
        let objects = scan_segment(&segment_path(dir, id), id)?;
        if objects.is_empty() {
            state.empty_at_open.push(segment_path(dir, id));
            continue;
        }
        state.segments.insert(
            id,
            SegmentInfo {
                live: 0,
                sealed: true,
            },
        );
        state.objects.reserve(objects.len());
        for (key, extent) in objects {
            state.segments.entry(id).or_default().live += 1;
            if let Some(old) = state.objects.insert(key, extent) {
                if let Some(info) = state.segments.get_mut(&old.segment) {
                    info.live = info.live.saturating_sub(1);
                }
            }
        }
    }
    Ok(state)
}

/// The entries of one segment, from its start to the first block without a header.
fn scan_segment(path: &Path, id: u64) -> Result<Vec<(String, Extent)>, WalError> {
    let name = path.display().to_string();
    let file = File::open(path).map_err(|e| WalError::io(&name, e))?;
    let file_len = file.metadata().map_err(|e| WalError::io(&name, e))?.len();
    let mut block = vec![0u8; ALIGNMENT as usize];
    let mut objects = Vec::new();
    let mut pos = 0u64;
    while pos + ALIGNMENT <= file_len {
        file.read_exact_at(&mut block, pos)
            .map_err(|e| WalError::io(&name, e))?;
        let Some(header) = EntryHeader::decode(&block) else {
            break;
        };
        let end = pos + header.entry_len();
        if end > file_len {
            tracing::warn!(segment = %name, offset = pos, "a segment entry runs past the file's end; the objects from there on are ignored (never acknowledged)");
            break;
        }
        objects.push((
            header.key.clone(),
            Extent {
                segment: id,
                data_offset: pos + header.data_offset(),
                len: header.data_len,
                written_at: header.written_at,
            },
        ));
        pos = end;
    }
    Ok(objects)
}
