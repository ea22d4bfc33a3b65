//! The sections of the broker's configuration file that the executors own (`[shards]`,
//! `[produce]`, `[fetch]`; `[groups]` is `GroupConfig`), as the file spells them: the broker
//! config embeds these types, and `RuntimeConfig` carries them to the executors unchanged.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// `[shards]`: the executors and the queues between them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ShardsConfig {
    /// CPUs to run one shard on each; empty means every online CPU.
    pub cores: Vec<usize>,
    /// Memory each executor registers with io_uring; the process total must fit `ulimit -l`.
    pub io_memory_bytes: usize,
    /// Depth of every queue between executors.
    pub queue_depth: usize,
    /// How long an idle executor spins before it parks: lower queue latency for a busier CPU.
    pub spin_before_park_us: u64,
}

impl Default for ShardsConfig {
    fn default() -> Self {
        ShardsConfig {
            cores: Vec::new(),
            // Three executors of 2 MiB stay inside the common 8 MiB `ulimit -l`.
            io_memory_bytes: 2 << 20,
            queue_depth: 1024,
            spin_before_park_us: 0,
        }
    }
}

impl ShardsConfig {
    pub fn spin_before_park(&self) -> Duration {
        Duration::from_micros(self.spin_before_park_us)
    }
}

/// `[produce]`: the WAL buffer, its rotation and the uploads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProduceConfig {
    /// Rotate the WAL buffer this long after its first write...
    pub commit_interval_ms: u64,
    /// ...or at once when no object is uploading or committing (group commit: writes gather
    /// only while the store is busy, so an idle broker answers in about one store write).
    pub rotate_when_idle: bool,
    /// On a store that does not bill requests: once an object's producers are answered, the
    /// next object waits at most this long for as many new writes as that object answered
    /// (closed-loop producers, such as the Java producer's five requests in flight, send their
    /// next requests on the answers). 0: the next object goes at once, as before.
    pub gather_returning_us: u64,
    /// ...or as soon as it holds this many bytes.
    pub buffer_max_bytes: usize,
    /// A produced batch's records may inflate to at most this (decompression bombs).
    pub max_inflated_batch_bytes: usize,
    /// Rotated objects being uploaded or committed at once, per shard.
    pub uploads_in_flight_max: usize,
    pub upload_attempts: u32,
    pub upload_backoff_ms: u64,
    /// Producers of an object whose commit takes longer are answered REQUEST_TIMED_OUT; the
    /// commit itself is still awaited, so order and what fetches see stay right.
    pub commit_answer_timeout_ms: u64,
}

impl Default for ProduceConfig {
    fn default() -> Self {
        ProduceConfig {
            // The local store's fsync costs about a millisecond: a few ms of batching buys
            // large objects without adding much produce latency (Inkless uses 250 ms on S3).
            commit_interval_ms: 5,
            rotate_when_idle: true,
            gather_returning_us: 500,
            buffer_max_bytes: 8 << 20,
            max_inflated_batch_bytes: 64 << 20,
            uploads_in_flight_max: 4,
            upload_attempts: 3,
            upload_backoff_ms: 10,
            // Below librdkafka's and the Java client's 30 s request timeout.
            commit_answer_timeout_ms: 10_000,
        }
    }
}

impl ProduceConfig {
    pub fn commit_interval(&self) -> Duration {
        Duration::from_millis(self.commit_interval_ms)
    }

    pub fn upload_backoff(&self) -> Duration {
        Duration::from_millis(self.upload_backoff_ms)
    }

    pub fn commit_answer_timeout(&self) -> Duration {
        Duration::from_millis(self.commit_answer_timeout_ms)
    }

    pub fn gather_returning(&self) -> Duration {
        Duration::from_micros(self.gather_returning_us)
    }
}

/// `[fetch]`: the cache of recent objects and the bounds of one Fetch answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FetchConfig {
    /// Recently committed objects each shard keeps for tailing consumers. Counted as the
    /// objects' bytes: a produced object is kept in the buffers its requests were read into,
    /// which stay allocated while any of their batches is cached (up to about twice this).
    pub cache_max_bytes: usize,
    /// What each shard may hold of ranges read ahead for consumers catching up (the next
    /// fetch's batches, read while the answer before travels); 0 reads nothing ahead.
    pub read_ahead_max_bytes: usize,
    /// Kafka's `fetch.max.bytes`: the most one Fetch answer holds, whatever it asks.
    pub max_bytes: usize,
    /// The longest a Fetch waits for data, whatever it asks.
    pub max_wait_ms: u64,
}

impl Default for FetchConfig {
    fn default() -> Self {
        FetchConfig {
            cache_max_bytes: 128 << 20,
            read_ahead_max_bytes: 64 << 20,
            max_bytes: 55 << 20,
            max_wait_ms: 30_000,
        }
    }
}

/// `[rewrite]`: merging small objects and compacting topics (cleanup.policy=compact), as
/// background work of the shard owning each partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RewriteConfig {
    /// How often each shard looks for partitions to merge or compact; 0 turns both off.
    pub check_interval_ms: u64,
    /// A rewritten object is closed once it holds this many bytes.
    pub object_max_bytes: usize,
    /// A partition's batches in WAL objects are merged once they hold this many bytes...
    pub merge_min_bytes: u64,
    /// ...or once the oldest of them was written this long ago.
    pub merge_max_age_ms: u64,
    /// A partition is merged only while its shares of WAL objects (its batches in one
    /// object), from the first smaller than this on, average fewer bytes than this: a larger
    /// share is read about as cheaply as a merged object. Unset: `LOCAL_MERGE_BELOW_BYTES` on
    /// the local store, no bound on S3 (where each read is a billed GET).
    pub merge_below_bytes: Option<u64>,
    /// Kafka's `log.cleaner.dedupe.buffer.size`: the key map of one compaction pass; a
    /// larger dirty range takes several passes.
    pub dedupe_buffer_bytes: usize,
    /// Bytes of batches read from the store per step.
    pub read_step_bytes: u32,
    /// Kafka's `log.cleaner.io.max.bytes.per.second`, per shard: rewriting reads no faster,
    /// so it never takes the disk or network a loaded producer needs; 0: no limit.
    pub io_max_bytes_per_second: u64,
}

impl Default for RewriteConfig {
    fn default() -> Self {
        RewriteConfig {
            check_interval_ms: 10_000,
            object_max_bytes: 32 << 20,
            merge_min_bytes: 8 << 20,
            merge_max_age_ms: 600_000,
            merge_below_bytes: None,
            dedupe_buffer_bytes: 128 << 20,
            read_step_bytes: 4 << 20,
            io_max_bytes_per_second: 32 << 20,
        }
    }
}

/// The default `[rewrite] merge_below_bytes` of the local store. Measured on the segment
/// layout (issue 63): merging costs 1.0-1.2 s of broker CPU per GB, and reading a partition
/// back from 40 KiB shares of unmerged objects costs 0.2-0.5 s per GB more than from merged
/// ones, so merging such shares pays only for data read back from disk two to six times;
/// below about 16 KiB a share costs as much to read once as it does to merge (and objects
/// that small waste most of their 4 KiB-aligned entries in a segment). The Java producer at
/// full speed writes shares of 16-70 KiB; a producer at low load, shares of a few KiB.
pub const LOCAL_MERGE_BELOW_BYTES: u64 = 16 << 10;

impl RewriteConfig {
    /// `merge_below_bytes` in effect on `store`: its setting, or the store's default.
    pub fn merge_below_bytes(&self, store: &shoal_wal::StoreConfig) -> u64 {
        self.merge_below_bytes.unwrap_or(match store {
            shoal_wal::StoreConfig::Local { .. } => LOCAL_MERGE_BELOW_BYTES,
            shoal_wal::StoreConfig::S3(_) => u64::MAX,
        })
    }
}

/// What the executors need to know; the engine fills it from the config file.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// This broker's id: the uploader named in the objects it commits.
    pub node_id: i32,
    pub data_dir: PathBuf,
    /// Where WAL objects live.
    pub store: shoal_wal::StoreConfig,
    /// One shard executor per listed CPU: `shards.cores`, or every online CPU.
    pub shard_cores: Vec<usize>,
    /// The coordinator's CPU; it may share a CPU with a shard on small machines.
    pub coordinator_core: usize,
    /// The coordinator runs in an executor of its own even where its CPU has a shard's,
    /// rather than as tasks on that shard's executor.
    pub coordinator_own_executor: bool,
    pub shards: ShardsConfig,
    pub produce: ProduceConfig,
    pub fetch: FetchConfig,
    /// What of `produce` and `fetch` an operator may change at run time, as changed.
    pub live: std::sync::Arc<crate::LiveSettings>,
    pub maintenance: crate::MaintenanceConfig,
    /// The coordinator snapshots its state once its current log holds this many bytes.
    pub snapshot_log_bytes: u64,
    /// Where the coordinator keeps its log: PostgreSQL, or None for the data directory.
    pub coordinator_database: Option<shoal_pg::PgConfig>,
    /// The database's log is shared with other brokers of a cluster.
    pub shared_coordinator_log: bool,
    pub groups: crate::GroupConfig,
    /// Drawn at the process's start: group claims name it, so a restarted broker holds none
    /// of its previous process's.
    pub incarnation: i64,
    /// Counts the lapses of this broker's cluster lease (its membership adds one when it
    /// renews a lease that had run out); its group claims are dropped on each.
    pub lease_lapses: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Whether this broker runs the cluster-wide duties (always, on a single node).
    pub duties: shoal_metalog::Duties,
    pub rewrite: RewriteConfig,
    /// How long each start-up step may take (`startup_timeout_ms`).
    pub startup_timeout: Duration,
}

impl RuntimeConfig {
    /// A number for this process's `incarnation`, distinct from any other process's.
    pub fn draw_incarnation() -> i64 {
        uuid::Uuid::new_v4().as_u64_pair().0 as i64
    }

    pub fn coordinator_dir(&self) -> PathBuf {
        self.data_dir.join("coordinator")
    }
}
