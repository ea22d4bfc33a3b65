use std::path::PathBuf;
use std::time::Duration;

/// What the executors need to know; the engine fills it from the config file.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// This broker's id: the uploader named in the objects it commits.
    pub node_id: i32,
    pub data_dir: PathBuf,
    /// Where WAL objects live.
    pub store: shoal_wal::StoreConfig,
    /// One shard executor per listed CPU.
    pub shard_cores: Vec<usize>,
    /// The coordinator executor's CPU; it may share a CPU with a shard on small machines.
    pub coordinator_core: usize,
    /// Memory each executor registers with io_uring; the process total must fit `ulimit -l`.
    pub io_memory_bytes: usize,
    /// How long an idle executor spins before it parks: lower queue latency for a busier CPU.
    pub spin_before_park: Duration,
    /// Rotate the WAL buffer this long after its first write...
    pub commit_interval: Duration,
    /// ...or at once when no object is uploading or committing (group commit: writes gather
    /// only while the store is busy, so an idle broker answers in about one store write).
    pub rotate_when_idle: bool,
    /// ...or as soon as it holds this many bytes.
    pub buffer_max_bytes: usize,
    /// A produced batch's records may inflate to at most this many bytes.
    pub inflated_batch_bytes_max: usize,
    /// Rotated objects being uploaded or committed at once, per shard.
    pub uploads_in_flight_max: usize,
    pub upload_attempts: u32,
    pub upload_backoff: Duration,
    /// Producers of an object whose commit takes longer are answered REQUEST_TIMED_OUT; the
    /// commit itself is still awaited, so order and what fetches see stay right.
    pub commit_answer_timeout: Duration,
    /// Recently committed objects each shard keeps for tailing consumers.
    pub fetch_cache_max_bytes: usize,
    /// Depth of every queue between executors.
    pub queue_depth: usize,
    pub maintenance: crate::MaintenanceConfig,
    /// The coordinator snapshots its state once its current log holds this many bytes.
    pub snapshot_log_bytes: u64,
    /// Where the coordinator keeps its log: PostgreSQL, or None for the data directory.
    pub coordinator_database: Option<shoal_pg::PgConfig>,
    /// The database's log is shared with other brokers of a cluster.
    pub shared_coordinator_log: bool,
    pub groups: crate::GroupConfig,
}

impl RuntimeConfig {
    pub fn coordinator_dir(&self) -> PathBuf {
        self.data_dir.join("coordinator")
    }
}
