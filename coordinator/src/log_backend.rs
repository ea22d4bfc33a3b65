//! Where the coordinator's records become durable: the metadata log files in the broker's
//! data directory (the embedded default), or PostgreSQL. Both take the same frames from the
//! same state machine.

use std::path::PathBuf;

use crate::log::MetadataLog;
use crate::postgres_log::PostgresLog;
use crate::state::CoordinatorState;
use crate::{snapshots, CoordinatorError};

pub enum LogBackend {
    Local { log: MetadataLog, dir: PathBuf },
    Postgres(Box<PostgresLog>),
}

impl LogBackend {
    pub async fn append_durable(&mut self, frames: Vec<u8>) -> Result<(), CoordinatorError> {
        match self {
            LogBackend::Local { log, .. } => log.append_durable(frames).await,
            LogBackend::Postgres(log) => log.append_durable(frames).await,
        }
    }

    /// Bytes appended since the newest snapshot.
    pub fn size_bytes(&self) -> u64 {
        match self {
            LogBackend::Local { log, .. } => log.size_bytes(),
            LogBackend::Postgres(log) => log.size_bytes(),
        }
    }

    /// Snapshots `state` so recovery reads one image and a short log; returns its bytes.
    /// Locally a new log generation starts at the boundary.
    pub async fn snapshot(&mut self, state: &CoordinatorState) -> Result<usize, CoordinatorError> {
        match self {
            LogBackend::Local { log, dir } => {
                let generation = log.generation() + 1;
                *log = MetadataLog::open_for_append(dir, generation, 0).await?;
                let bytes = snapshots::write_snapshot(dir, generation, state).await?;
                snapshots::remove_obsolete(dir).await;
                Ok(bytes)
            }
            LogBackend::Postgres(log) => log.write_snapshot(state).await,
        }
    }
}
