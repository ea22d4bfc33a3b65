//! The values the stores and their users share: which lane a write is, how a local store lays
//! objects out, and a listed object. Below every store, so none imports the module that
//! chooses among them.

/// Whose write a put is. On the segment layout each lane appends to segments of its own, with
/// its own group commits, and the background lane writes an object a part at a time: a
/// rewritten object of 32 MiB written at once queued 32 MiB in the device ahead of produce's
/// next small write (measured: produce p99 at half load 30-55 ms with merging on, 3-4 ms with
/// it off, 10-15 ms with merged objects written in parts). Other stores treat both alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteLane {
    /// Objects producers wait for.
    Produce,
    /// Objects written by background work (merging, compaction).
    Background,
}

/// How a local store writes new objects (it reads both).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalLayout {
    /// One file per object.
    Files,
    /// Appended to preallocated segment files of this size (an object larger gets a
    /// segment of its own size).
    Segments { segment_bytes: u64 },
}

/// An object a listing found, with the time it was last written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedObject {
    pub key: String,
    pub modified: std::time::SystemTime,
}
