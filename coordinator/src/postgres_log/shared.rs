//! Many brokers writing one log. A round locks the writer row (FOR UPDATE, held to COMMIT),
//! applies the rows other brokers wrote since this broker's last, is decided on that state,
//! and appends its row and a NOTIFY before unlocking, so rows commit in sequence and every
//! decision sees every earlier one. Between rounds, brokers apply new rows when notified.

use shoal_pg::{Connection, Param, PgError};

use super::rows::{read_newest_snapshot, replay_after};
use super::writer::{RETRY_FIRST, RETRY_MAX};
use super::{db, PostgresLog, NOTIFY_CHANNEL};
use crate::state::CoordinatorState;
use crate::CoordinatorError;

impl PostgresLog {
    /// Applies the rows other brokers appended since this broker's last; true if any.
    pub async fn catch_up(
        &mut self,
        state: &mut CoordinatorState,
    ) -> Result<bool, CoordinatorError> {
        let mut connection = self.writer.take().await.map_err(db)?;
        let applied = self.catch_up_on(&mut connection, state).await;
        self.writer.give_back(connection);
        applied
    }

    /// Locks the log for one round and brings `state` up to its last row; true if rows were
    /// applied. Waits out PostgreSQL being unreachable, retrying with backoff.
    pub async fn lock_for_round(
        &mut self,
        state: &mut CoordinatorState,
    ) -> Result<bool, CoordinatorError> {
        let mut pause = RETRY_FIRST;
        loop {
            let mut connection = match self.writer.take().await {
                Ok(connection) => connection,
                Err(e) if e.is_transient() => {
                    tracing::warn!(error = %e, "cannot reach PostgreSQL to lock the log; retrying");
                    glommio::timer::sleep(pause).await;
                    pause = (pause * 2).min(RETRY_MAX);
                    continue;
                }
                Err(e) => return Err(db(e)),
            };
            let applied = match lock(&mut connection).await {
                Ok(()) => self.catch_up_on(&mut connection, state).await,
                Err(e) if e.is_transient() || connection.is_broken() => {
                    Err(CoordinatorError::Database(e.to_string()))
                }
                Err(e) => return Err(db(e)),
            };
            match applied {
                Ok(applied) => {
                    self.locked = Some(connection);
                    return Ok(applied);
                }
                // Lost on the way: nothing was written, the lock went with the connection.
                Err(CoordinatorError::Database(e)) if connection.is_broken() => {
                    tracing::warn!(error = %e, "locking the log failed; retrying");
                    glommio::timer::sleep(pause).await;
                    pause = (pause * 2).min(RETRY_MAX);
                }
                Err(e) => {
                    let _ = connection.batch_execute("ROLLBACK").await;
                    return Err(e);
                }
            }
        }
    }

    /// Ends a round that wrote nothing, releasing the lock.
    pub async fn unlock(&mut self) {
        if let Some(mut connection) = self.locked.take() {
            if connection.batch_execute("COMMIT").await.is_ok() {
                self.writer.give_back(connection);
            }
        }
    }

    /// Appends the locked round's frames as the next row, announces it and unlocks. An
    /// outcome left unknown is settled under the lock again: the row is this broker's, or
    /// absent and written now; a row of another broker's in its place means this broker's
    /// state is ahead of the log, which is an error the coordinator must stop on.
    pub async fn append_locked(&mut self, frames: Vec<u8>) -> Result<(), CoordinatorError> {
        let seq = self.next_seq;
        let crc = crc32c::crc32c(&frames) as i64;
        let epoch = self.writer.epoch;
        let mut connection = self
            .locked
            .take()
            .expect("a shared round appends after lock_for_round");
        let outcome = async {
            insert_and_notify(&mut connection, seq, epoch, &frames, crc).await?;
            connection.batch_execute("COMMIT").await
        }
        .await;
        match outcome {
            Ok(()) => self.writer.give_back(connection),
            Err(e) => {
                tracing::warn!(seq, error = %e, "coordinator log append failed; settling it");
                drop(connection);
                self.settle(seq, epoch, &frames, crc).await?;
            }
        }
        self.next_seq = seq + 1;
        self.bytes_since_snapshot += frames.len() as u64;
        Ok(())
    }

    async fn settle(
        &mut self,
        seq: i64,
        epoch: i64,
        frames: &[u8],
        crc: i64,
    ) -> Result<(), CoordinatorError> {
        let mut pause = RETRY_FIRST;
        loop {
            let attempt = async {
                let mut connection = self.writer.take().await?;
                // The lock waits for a transaction of ours that may still be committing.
                lock(&mut connection).await?;
                let existing = connection
                    .query(
                        "SELECT crc FROM coordinator_log WHERE seq = $1",
                        &[Param::I64(seq)],
                    )
                    .await?;
                let settled = match existing.first() {
                    Some(row) => row.i64(0)? == crc,
                    None => {
                        insert_and_notify(&mut connection, seq, epoch, frames, crc).await?;
                        true
                    }
                };
                connection.batch_execute("COMMIT").await?;
                self.writer.give_back(connection);
                Ok::<bool, PgError>(settled)
            };
            match attempt.await {
                Ok(true) => return Ok(()),
                Ok(false) => {
                    return Err(CoordinatorError::Fenced(format!(
                        "another broker wrote row {seq} of coordinator_log while this broker's \
                         append of it failed: this broker's state is ahead of the log and is \
                         rebuilt from PostgreSQL on restart"
                    )))
                }
                Err(e) if e.is_transient() => {
                    tracing::warn!(seq, error = %e, "settling a coordinator log append; retrying");
                    glommio::timer::sleep(pause).await;
                    pause = (pause * 2).min(RETRY_MAX);
                }
                Err(e) => return Err(db(e)),
            }
        }
    }

    async fn catch_up_on(
        &mut self,
        connection: &mut Connection,
        state: &mut CoordinatorState,
    ) -> Result<bool, CoordinatorError> {
        let mut replayed = replay_after(connection, state, self.next_seq - 1).await?;
        let reloaded = replayed.gap;
        if replayed.gap {
            // A snapshot covered rows this broker had not read: start from it instead.
            let (fresh, snapshot_seq) = read_newest_snapshot(connection).await?;
            let snapshot_seq = snapshot_seq.unwrap_or(0);
            if snapshot_seq < replayed.last_seq + 1 {
                return Err(CoordinatorError::Damaged(format!(
                    "coordinator_log has no row {} and no snapshot covers it",
                    replayed.last_seq + 1
                )));
            }
            *state = fresh;
            replayed = replay_after(connection, state, snapshot_seq).await?;
            if replayed.gap {
                return Err(CoordinatorError::Damaged(format!(
                    "coordinator_log has no row {} after snapshot {snapshot_seq}",
                    replayed.last_seq + 1
                )));
            }
        }
        self.next_seq = replayed.last_seq + 1;
        Ok(reloaded || replayed.records > 0)
    }
}

async fn lock(connection: &mut Connection) -> Result<(), PgError> {
    connection.batch_execute("BEGIN").await?;
    connection
        .query(
            "SELECT epoch FROM coordinator_writer WHERE id = 1 FOR UPDATE",
            &[],
        )
        .await
        .map(|_| ())
}

/// One statement: the row, and the notification other brokers wait for (sent at COMMIT).
async fn insert_and_notify(
    connection: &mut Connection,
    seq: i64,
    epoch: i64,
    frames: &[u8],
    crc: i64,
) -> Result<(), PgError> {
    let sql = format!(
        "WITH row AS (INSERT INTO coordinator_log (seq, epoch, frames, crc) \
         VALUES ($1, $2, $3, $4) RETURNING seq) \
         SELECT pg_notify('{NOTIFY_CHANNEL}', seq::text) FROM row"
    );
    connection
        .query(
            &sql,
            &[
                Param::I64(seq),
                Param::I64(epoch),
                Param::Bytes(frames),
                Param::I64(crc),
            ],
        )
        .await
        .map(|_| ())
}
