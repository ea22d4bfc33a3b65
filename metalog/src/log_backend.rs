//! Where the coordinator's records become durable: the metadata log files in the broker's
//! data directory (the embedded default), or PostgreSQL. Both take the same frames from the
//! same state machine.

use std::future::{ready, Future};
use std::path::PathBuf;
use std::pin::Pin;

use crate::log::MetadataLog;
use crate::postgres_log::{PostgresLog, WriterRole};
use crate::{snapshots, MetaLogError};
use shoal_coordinator::state::CoordinatorState;

pub enum LogBackend {
    Local { log: MetadataLog, dir: PathBuf },
    Postgres(Box<PostgresLog>),
}

/// Resolves once a round's records are durable.
pub type Durable = Pin<Box<dyn Future<Output = Result<(), MetaLogError>>>>;

impl LogBackend {
    /// Starts making one round's frames durable. The local log writes and syncs before
    /// returning; PostgreSQL sends the row and lets the caller decide the next round
    /// meanwhile.
    pub async fn begin_append(&mut self, frames: Vec<u8>) -> Durable {
        match self {
            LogBackend::Local { log, .. } => Box::pin(ready(log.append_durable(frames).await)),
            LogBackend::Postgres(log) if log.role() == WriterRole::Shared => {
                Box::pin(ready(log.append_locked(frames).await))
            }
            LogBackend::Postgres(log) => log.begin_append(frames),
        }
    }

    /// Before a round with writes: a shared log is locked and `state` brought up to its last
    /// row. True if rows of other brokers were applied.
    pub async fn prepare_round(
        &mut self,
        state: &mut CoordinatorState,
    ) -> Result<bool, MetaLogError> {
        match self {
            LogBackend::Postgres(log) if log.role() == WriterRole::Shared => {
                log.lock_for_round(state).await
            }
            _ => Ok(false),
        }
    }

    /// A prepared round that made no records: a shared log is unlocked.
    pub async fn end_round_without_records(&mut self) {
        if let LogBackend::Postgres(log) = self {
            if log.role() == WriterRole::Shared {
                log.unlock().await;
            }
        }
    }

    /// Applies rows other brokers appended to a shared log; true if any.
    pub async fn catch_up(&mut self, state: &mut CoordinatorState) -> Result<bool, MetaLogError> {
        match self {
            LogBackend::Postgres(log) if log.role() == WriterRole::Shared => {
                log.catch_up(state).await
            }
            _ => Ok(false),
        }
    }

    /// A log other brokers write too.
    pub fn is_shared(&self) -> bool {
        matches!(self, LogBackend::Postgres(log) if log.role() == WriterRole::Shared)
    }

    /// The state as the log holds it, read afresh; only a shared log loses rounds.
    pub async fn reload(&mut self) -> Result<CoordinatorState, MetaLogError> {
        match self {
            LogBackend::Postgres(log) if log.role() == WriterRole::Shared => log.reload().await,
            _ => Err(MetaLogError::Damaged(
                "only a shared log's state is reloaded in place".into(),
            )),
        }
    }

    /// Rounds that may wait for durability at once: the local log syncs one at a time.
    pub fn appends_in_flight(&self) -> usize {
        match self {
            LogBackend::Local { .. } => 1,
            LogBackend::Postgres(log) => log.appends_in_flight(),
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
    pub async fn snapshot(&mut self, state: &CoordinatorState) -> Result<usize, MetaLogError> {
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
