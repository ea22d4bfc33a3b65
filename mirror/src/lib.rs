//! Cluster mirroring (KIP-1279), the I/O-free half: the per-partition state machine with its
//! retry backoff, mirror names, and mirror settings. Fetching from the source cluster and the
//! durable state live in `shoal-shards` and `shoal-coordinator`.

pub mod config;
pub mod error;
pub mod names;
pub mod state;

pub use config::MirrorConfig;
pub use error::MirrorError;
pub use names::validate_mirror_name;
pub use state::{MirrorState, PartitionMirror};
