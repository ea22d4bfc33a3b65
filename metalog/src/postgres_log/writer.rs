//! The writer's connections and its appends: one row per round, each append on a pooled
//! connection of its own so rounds can be in flight together, an unknown outcome settled by
//! reading the row back.

use std::cell::RefCell;
use std::time::Duration;

use shoal_pg::{Connection, Param, PgConfig, PgError};

use super::{db, fenced};
use crate::MetaLogError;

/// Retrying an append whose outcome is unknown: first pause and the longest one.
const RETRY_FIRST: Duration = Duration::from_millis(50);
const RETRY_MAX: Duration = Duration::from_secs(5);

/// Pauses between retries while PostgreSQL does not answer: doubling from `RETRY_FIRST` up
/// to `RETRY_MAX`.
pub(super) struct Backoff(Duration);

impl Backoff {
    pub fn new() -> Backoff {
        Backoff(RETRY_FIRST)
    }

    pub async fn wait(&mut self) {
        glommio::timer::sleep(self.0).await;
        self.0 = (self.0 * 2).min(RETRY_MAX);
    }
}

/// The longest a shared log's broker may hold the log's lock without sending anything: a
/// paused, partitioned or starved broker's session is ended by PostgreSQL after this, so the
/// others' rounds wait at most this long (well under any cluster lease); the stalled
/// broker's round then fails and is settled, or lost and its state reloaded.
pub const SHARED_LOCK_IDLE_MAX: Duration = Duration::from_millis(1000);

/// What every append in flight shares: the writer's epoch and its idle connections.
pub(super) struct Writer {
    pub config: PgConfig,
    pub epoch: i64,
    pub idle: RefCell<Vec<Connection>>,
    /// Connections of a shared log's broker, which lock the log for rounds.
    pub shared: bool,
}

impl Writer {
    /// Makes `frames` row `seq`. An append whose outcome is unknown (a timeout, a lost
    /// connection, PostgreSQL restarting) is settled by reading the row back on a new
    /// connection, and retried with backoff until PostgreSQL answers.
    pub async fn append(&self, seq: i64, frames: &[u8]) -> Result<(), MetaLogError> {
        let crc = crc32c::crc32c(frames) as i64;
        let mut backoff = Backoff::new();
        let mut retrying = false;
        loop {
            let attempt = async {
                let mut connection = self.take().await?;
                let outcome = self
                    .try_append(&mut connection, seq, frames, crc, retrying)
                    .await;
                self.give_back(connection);
                outcome
            };
            match attempt.await {
                Ok(true) => return Ok(()),
                Ok(false) => return Err(fenced(seq)),
                Err(e) if e.is_transient() => {
                    tracing::warn!(seq, error = %e, "coordinator log append failed; retrying");
                    retrying = true;
                    backoff.wait().await;
                }
                Err(e) => return Err(db(e)),
            }
        }
    }

    /// Whether row `seq` now holds these frames from this writer; false: another writer's.
    /// A retry first reads the row back: the failed try may have committed before its answer
    /// was lost. A first try needs no read: nothing has written `seq` under this epoch.
    async fn try_append(
        &self,
        connection: &mut Connection,
        seq: i64,
        frames: &[u8],
        crc: i64,
        retrying: bool,
    ) -> Result<bool, PgError> {
        let epoch = self.epoch;
        if retrying {
            let existing = connection
                .query(
                    "SELECT epoch, crc FROM coordinator_log WHERE seq = $1",
                    &[Param::I64(seq)],
                )
                .await?;
            if let Some(row) = existing.first() {
                return Ok(row.i64(0)? == epoch && row.i64(1)? == crc);
            }
        }
        let inserted = connection
            .execute(
                "WITH writer AS (SELECT epoch FROM coordinator_writer WHERE id = 1 FOR SHARE) \
                 INSERT INTO coordinator_log (seq, epoch, frames, crc) \
                 SELECT $1, $2, $3, $4 FROM writer WHERE writer.epoch = $2",
                &[
                    Param::I64(seq),
                    Param::I64(epoch),
                    Param::Bytes(frames),
                    Param::I64(crc),
                ],
            )
            .await?;
        Ok(inserted == 1)
    }

    /// An idle connection, or a new one: at most one per append in flight is ever open.
    pub async fn take(&self) -> Result<Connection, PgError> {
        let idle = self.idle.borrow_mut().pop();
        match idle {
            Some(connection) if !connection.is_broken() => Ok(connection),
            _ => {
                let mut connection = Connection::connect(&self.config).await?;
                if self.shared {
                    bound_lock_holding(&mut connection).await?;
                }
                Ok(connection)
            }
        }
    }

    /// A broken connection is dropped; the next take opens a fresh one.
    pub fn give_back(&self, connection: Connection) {
        let mut idle = self.idle.borrow_mut();
        if !connection.is_broken() && idle.len() < self.config.pool_size.max(1) {
            idle.push(connection);
        }
    }
}

/// Has PostgreSQL end this session's transaction when it sits idle holding locks for longer
/// than `SHARED_LOCK_IDLE_MAX`.
pub(super) async fn bound_lock_holding(connection: &mut Connection) -> Result<(), PgError> {
    let ms = SHARED_LOCK_IDLE_MAX.as_millis();
    connection
        .batch_execute(&format!("SET idle_in_transaction_session_timeout = {ms}"))
        .await
}
