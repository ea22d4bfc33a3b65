//! Many brokers writing one log. A round locks the writer row (FOR UPDATE, held to COMMIT),
//! applies the rows other brokers wrote since this broker's last, is decided on that state,
//! and appends its row and a NOTIFY before unlocking, so rows commit in sequence and every
//! decision sees every earlier one. Between rounds, brokers apply new rows when notified.

use shoal_pg::{Connection, Param, PgError, Row};

use super::rows::{page_params, read_newest_snapshot, replay_pages, Replayed, PAGE_QUERY};
use super::writer::Backoff;
use super::{db, PostgresLog, NOTIFY_CHANNEL};
use crate::MetaLogError;
use shoal_coordinator::state::CoordinatorState;

impl PostgresLog {
    /// Applies the rows other brokers appended since this broker's last; true if any.
    pub async fn catch_up(&mut self, state: &mut CoordinatorState) -> Result<bool, MetaLogError> {
        let mut connection = self.writer.take().await.map_err(db)?;
        let applied = self.catch_up_on(&mut connection, state, None).await;
        self.writer.give_back(connection);
        applied
    }

    /// Locks the log for one round and brings `state` up to its last row; true if rows were
    /// applied. Waits out PostgreSQL being unreachable, retrying with backoff.
    pub async fn lock_for_round(
        &mut self,
        state: &mut CoordinatorState,
    ) -> Result<bool, MetaLogError> {
        let mut backoff = Backoff::new();
        loop {
            let mut connection = match self.writer.take().await {
                Ok(connection) => connection,
                Err(e) if e.is_transient() => {
                    tracing::warn!(error = %e, "cannot reach PostgreSQL to lock the log; retrying");
                    backoff.wait().await;
                    continue;
                }
                Err(e) => return Err(db(e)),
            };
            // The lock and the first page of new rows in one round trip: the page is read
            // once the lock is held.
            let last_seq = self.next_seq - 1;
            let first_page = connection
                .simple_then_query(LOCK, PAGE_QUERY, &page_params(&last_seq))
                .await;
            let failure = match first_page {
                Ok(rows) => match self.catch_up_on(&mut connection, state, Some(rows)).await {
                    Ok(applied) => {
                        self.locked = Some(connection);
                        return Ok(applied);
                    }
                    Err(MetaLogError::Database { message, .. }) => message,
                    Err(e) => {
                        end_transaction(connection).await;
                        return Err(e);
                    }
                },
                Err(e) if e.is_transient() || connection.is_broken() => e.to_string(),
                Err(e) => {
                    end_transaction(connection).await;
                    return Err(db(e));
                }
            };
            // Nothing was written; rows applied so far stay applied. Try the round again.
            tracing::warn!(error = %failure, "locking the log failed; retrying");
            end_transaction(connection).await;
            backoff.wait().await;
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
    /// absent and written now; a row of another broker's in its place (this broker's session
    /// ended while it held the lock, and another wrote) means the round was lost: `LostRace`,
    /// after which the state must be reloaded.
    pub async fn append_locked(&mut self, frames: Vec<u8>) -> Result<(), MetaLogError> {
        let seq = self.next_seq;
        let crc = crc32c::crc32c(&frames) as i64;
        let epoch = self.writer.epoch;
        let mut connection = self
            .locked
            .take()
            .expect("a shared round appends after lock_for_round");
        // The row, its notification and the COMMIT in one round trip.
        let outcome = connection
            .execute_then_simple(
                &insert_and_notify_sql(),
                &row_params(seq, epoch, &frames, crc),
                "COMMIT",
            )
            .await;
        match outcome {
            Ok(_) => self.writer.give_back(connection),
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
    ) -> Result<(), MetaLogError> {
        let mut backoff = Backoff::new();
        loop {
            let attempt = async {
                let mut connection = self.writer.take().await?;
                // The lock waits for a transaction of ours that may still be committing.
                connection.batch_execute(LOCK).await?;
                let existing = connection
                    .query(
                        "SELECT crc FROM coordinator_log WHERE seq = $1",
                        &[Param::I64(seq)],
                    )
                    .await?;
                let settled = match existing.first() {
                    Some(row) => row.i64(0)? == crc,
                    None => {
                        let params = row_params(seq, epoch, frames, crc);
                        connection.query(&insert_and_notify_sql(), &params).await?;
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
                    return Err(MetaLogError::LostRace(format!(
                        "another broker wrote row {seq} of coordinator_log while this broker's \
                         append of it failed"
                    )))
                }
                Err(e) if e.is_transient() => {
                    tracing::warn!(seq, error = %e, "settling a coordinator log append; retrying");
                    backoff.wait().await;
                }
                Err(e) => return Err(db(e)),
            }
        }
    }

    /// The state as the log holds it, read afresh (the newest snapshot and the rows after
    /// it), for a broker whose own state went ahead of the log: its round lost the race for
    /// its row to another broker's.
    pub async fn reload(&mut self) -> Result<CoordinatorState, MetaLogError> {
        let mut connection = self.writer.take().await.map_err(db)?;
        let mut state = CoordinatorState::default();
        let reloaded = self
            .start_from_snapshot(&mut connection, &mut state, None)
            .await;
        self.writer.give_back(connection);
        self.bytes_since_snapshot = reloaded?.bytes;
        Ok(state)
    }

    /// Applies the rows after this broker's last (`first_page` of them read already). Rows
    /// applied before an error stay applied and counted, so none is applied twice.
    async fn catch_up_on(
        &mut self,
        connection: &mut Connection,
        state: &mut CoordinatorState,
        first_page: Option<Vec<Row>>,
    ) -> Result<bool, MetaLogError> {
        let mut replayed = Replayed {
            last_seq: self.next_seq - 1,
            ..Replayed::default()
        };
        let read = replay_pages(connection, state, &mut replayed, first_page).await;
        self.next_seq = replayed.last_seq + 1;
        read?;
        if !replayed.gap {
            return Ok(replayed.records > 0);
        }
        // A snapshot covered rows this broker had not read: start from it instead.
        let missing = replayed.last_seq + 1;
        self.start_from_snapshot(connection, state, Some(missing))
            .await?;
        Ok(true)
    }

    /// Replaces `state` with the newest snapshot (which must cover row `missing`, when one
    /// is missing) and applies every row after it; a row missing after it is damage.
    async fn start_from_snapshot(
        &mut self,
        connection: &mut Connection,
        state: &mut CoordinatorState,
        missing: Option<i64>,
    ) -> Result<Replayed, MetaLogError> {
        let (fresh, snapshot_seq) = read_newest_snapshot(connection).await?;
        let snapshot_seq = snapshot_seq.unwrap_or(0);
        if let Some(missing) = missing.filter(|row| snapshot_seq < *row) {
            return Err(MetaLogError::Damaged(format!(
                "coordinator_log has no row {missing} and no snapshot covers it"
            )));
        }
        *state = fresh;
        let mut replayed = Replayed {
            last_seq: snapshot_seq,
            ..Replayed::default()
        };
        let read = replay_pages(connection, state, &mut replayed, None).await;
        self.next_seq = replayed.last_seq + 1;
        read?;
        if replayed.gap {
            return Err(MetaLogError::Damaged(format!(
                "coordinator_log has no row {} after snapshot {snapshot_seq}",
                replayed.last_seq + 1
            )));
        }
        Ok(replayed)
    }
}

/// Ends a transaction that must not commit (ROLLBACK) and keeps the connection if it is
/// still in step; a broken one is dropped, which ends its transaction on the server.
async fn end_transaction(mut connection: Connection) {
    if !connection.is_broken() {
        let _ = connection.batch_execute("ROLLBACK").await;
    }
}

/// Begins the round's transaction and takes the log's lock, held to COMMIT.
const LOCK: &str = "BEGIN; SELECT epoch FROM coordinator_writer WHERE id = 1 FOR UPDATE";

/// One statement: the row, and the notification other brokers wait for (sent at COMMIT).
fn insert_and_notify_sql() -> String {
    format!(
        "WITH row AS (INSERT INTO coordinator_log (seq, epoch, frames, crc) \
         VALUES ($1, $2, $3, $4) RETURNING seq) \
         SELECT pg_notify('{NOTIFY_CHANNEL}', seq::text) FROM row"
    )
}

fn row_params<'a>(seq: i64, epoch: i64, frames: &'a [u8], crc: i64) -> [Param<'a>; 4] {
    [
        Param::I64(seq),
        Param::I64(epoch),
        Param::Bytes(frames),
        Param::I64(crc),
    ]
}
