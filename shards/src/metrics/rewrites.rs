//! What rewrites did to one partition on a shard: the values behind the per-partition
//! rewrite families of `tables.rs`.

/// One partition's rewrites on this shard since the broker started.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartitionRewrites {
    pub bytes: u64,
    pub objects: u64,
    pub records_removed: u64,
    /// When the last rewrite of it ended, in ms since the epoch.
    pub last_run_ms: i64,
}
