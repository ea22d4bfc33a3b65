//! The shard's part of cluster mirroring (KIP-1279): storing batches fetched from a source at
//! the source's offsets, and what the fetchers last saw of each source partition (for lag
//! metrics and the mirror's describe APIs). The fetchers themselves run in the engine; the
//! mirror's state machine is the coordinator's.

pub mod progress;
pub mod store;
