//! The coordinator's log in PostgreSQL: each group-committed round's frames are one row, in
//! sequence; snapshots are rows too. The state machine is the local back end's, so both back
//! ends decide every command the same way; PostgreSQL makes the decisions durable, replicated
//! and shared. A sole writer takes the role by bumping the epoch, and a row is only inserted
//! while its writer's epoch is current (checked under a row lock in the same statement), so
//! a fenced broker cannot append after the new writer has read the log. The brokers of a
//! cluster all write (`shared`): each round under the log's lock, after reading what the
//! others wrote.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

use shoal_pg::{migrations, Connection, Migration, Param, PgConfig, PgError};

use crate::log_backend::Durable;
use crate::recovery::RecoveryStats;
use crate::MetaLogError;
use shoal_coordinator::state::CoordinatorState;

mod rows;
mod shared;
mod writer;

use rows::{drop_rows_after_gap, read_newest_snapshot, replay_after};
pub use writer::SHARED_LOCK_IDLE_MAX;
use writer::{bound_lock_holding, Writer};

pub const MIGRATIONS: [Migration; 2] = [
    Migration {
        version: 1,
        name: "coordinator log",
        sql: include_str!("../../migrations/0001_coordinator_log.sql"),
    },
    Migration {
        version: 2,
        name: "cluster brokers",
        sql: include_str!("../../migrations/0002_cluster_brokers.sql"),
    },
];

/// A snapshot is stored in parts of at most this many bytes, each well within one bytea
/// value and the client's message limit.
const SNAPSHOT_PART_BYTES: usize = 32 << 20;
/// The most appends a writer keeps in flight (one per pooled connection), so rows a crash
/// left after a missing one can only be this close to it.
pub const MAX_APPENDS_IN_FLIGHT: usize = 16;
/// The channel on which a shared writer announces each new row.
pub const NOTIFY_CHANNEL: &str = "shoal_coordinator_log";

/// How a broker writes the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriterRole {
    /// The only writer: takes the role by bumping the epoch, which fences the one before,
    /// and may keep several rounds in flight.
    Sole,
    /// One of a cluster's brokers, all writing: each round locks the log, reads the rows other
    /// brokers wrote, decides on the state they make, and appends before unlocking.
    Shared,
}

pub struct PostgresLog {
    writer: Rc<Writer>,
    role: WriterRole,
    /// The row after the last one this broker's state includes.
    next_seq: i64,
    bytes_since_snapshot: u64,
    /// Shared: the connection whose transaction holds the log's lock for the current round.
    locked: Option<Connection>,
}

impl PostgresLog {
    /// Migrates the schema, takes the writer role (fencing any earlier sole writer) and
    /// rebuilds the state from the newest snapshot and the rows after it.
    pub async fn open(
        config: &PgConfig,
        holder: &str,
        role: WriterRole,
    ) -> Result<(CoordinatorState, PostgresLog, RecoveryStats), MetaLogError> {
        let started = Instant::now();
        let mut connection = Connection::connect(config).await.map_err(db)?;
        migrations::apply(&mut connection, &MIGRATIONS)
            .await
            .map_err(db)?;
        // Appends in flight hold the writer row FOR SHARE, so a new sole writer waits for the
        // previous writer's to finish, and none of its later ones can match the new epoch.
        // Shared writers lock that row for each round instead and leave the epoch alone.
        let take_role = match role {
            WriterRole::Sole => {
                "INSERT INTO coordinator_writer (id, epoch, holder) VALUES (1, 1, $1) \
                 ON CONFLICT (id) DO UPDATE SET epoch = coordinator_writer.epoch + 1, \
                 holder = $1, since = now() RETURNING epoch"
            }
            WriterRole::Shared => {
                "INSERT INTO coordinator_writer (id, epoch, holder) VALUES (1, 1, $1) \
                 ON CONFLICT (id) DO UPDATE SET holder = coordinator_writer.holder \
                 RETURNING epoch"
            }
        };
        let rows = connection
            .query(take_role, &[Param::Text(holder)])
            .await
            .map_err(db)?;
        let epoch = single(&rows)?.i64(0).map_err(db)?;
        if role == WriterRole::Shared {
            bound_lock_holding(&mut connection).await.map_err(db)?;
        }
        let (mut state, snapshot_seq) = read_newest_snapshot(&mut connection).await?;
        let replayed = replay_after(&mut connection, &mut state, snapshot_seq.unwrap_or(0)).await?;
        if replayed.gap {
            match role {
                WriterRole::Sole => {
                    drop_rows_after_gap(&mut connection, epoch, replayed.last_seq).await?
                }
                // Shared writers commit rows in order under the lock: a gap is damage.
                WriterRole::Shared => {
                    return Err(MetaLogError::Damaged(format!(
                        "coordinator_log has no row {} but later ones: rows are missing",
                        replayed.last_seq + 1
                    )))
                }
            }
        }
        let stats = RecoveryStats {
            snapshot_generation: snapshot_seq.map(|s| s as u64),
            records_replayed: replayed.records,
            elapsed_ms: started.elapsed().as_millis(),
        };
        let writer = Writer {
            config: config.clone(),
            epoch,
            idle: RefCell::new(vec![connection]),
            shared: role == WriterRole::Shared,
        };
        let log = PostgresLog {
            writer: Rc::new(writer),
            role,
            next_seq: replayed.last_seq + 1,
            bytes_since_snapshot: replayed.bytes,
            locked: None,
        };
        Ok((state, log, stats))
    }

    pub fn role(&self) -> WriterRole {
        self.role
    }

    pub fn epoch(&self) -> i64 {
        self.writer.epoch
    }

    /// Rounds that may be in flight at once: one per pooled connection for a sole writer;
    /// one for a shared writer, whose rounds hold the log's lock.
    pub fn appends_in_flight(&self) -> usize {
        match self.role {
            WriterRole::Sole => self.writer.config.pool_size.clamp(1, MAX_APPENDS_IN_FLIGHT),
            WriterRole::Shared => 1,
        }
    }

    /// Bytes of frames appended since the newest snapshot.
    pub fn size_bytes(&self) -> u64 {
        self.bytes_since_snapshot
    }

    /// Makes one round's frames durable as the next row, on a connection of its own, when
    /// polled; the next round's row can be sent before this one is answered. Rows may commit out
    /// of order; the caller acknowledges rounds in order, so a row after one that never
    /// committed was never acknowledged, and recovery drops it.
    pub fn begin_append(&mut self, frames: Vec<u8>) -> Durable {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.bytes_since_snapshot += frames.len() as u64;
        let writer = self.writer.clone();
        Box::pin(async move { writer.append(seq, &frames).await })
    }

    /// Stores `state` as the snapshot after every row it includes and drops the older
    /// snapshots and the rows it covers but its last (which tells a shared writer that is
    /// behind where the snapshot ends), in one transaction, while this broker may still write.
    /// Only called with no append in flight, so `state` is exactly what the rows hold.
    pub async fn write_snapshot(
        &mut self,
        state: &CoordinatorState,
    ) -> Result<usize, MetaLogError> {
        let image = state.encode_snapshot();
        let last_seq = self.next_seq - 1;
        let epoch = self.writer.epoch;
        let mut connection = self.writer.take().await.map_err(db)?;
        let outcome = async {
            connection.batch_execute("BEGIN").await?;
            let writer = connection
                .query(
                    "SELECT epoch FROM coordinator_writer WHERE id = 1 FOR SHARE",
                    &[],
                )
                .await?;
            if writer.first().map(|r| r.i64(0)).transpose()? != Some(epoch) {
                return Ok(false);
            }
            let parts: Vec<&[u8]> = image.chunks(SNAPSHOT_PART_BYTES).collect();
            for (part, bytes) in parts.iter().enumerate() {
                connection
                    .execute(
                        "INSERT INTO coordinator_snapshots (last_seq, part, parts, bytes, crc) \
                         VALUES ($1, $2, $3, $4, $5)",
                        &[
                            Param::I64(last_seq),
                            Param::I32(part as i32),
                            Param::I32(parts.len() as i32),
                            Param::Bytes(bytes),
                            Param::I64(crc32c::crc32c(bytes) as i64),
                        ],
                    )
                    .await?;
            }
            connection
                .execute(
                    "DELETE FROM coordinator_log WHERE seq < $1",
                    &[Param::I64(last_seq)],
                )
                .await?;
            connection
                .execute(
                    "DELETE FROM coordinator_snapshots WHERE last_seq < $1",
                    &[Param::I64(last_seq)],
                )
                .await?;
            connection.batch_execute("COMMIT").await.map(|()| true)
        }
        .await;
        if !matches!(outcome, Ok(true)) && !connection.is_broken() {
            let _ = connection.batch_execute("ROLLBACK").await;
        }
        self.writer.give_back(connection);
        if !outcome.map_err(db)? {
            return Err(fenced(last_seq));
        }
        self.bytes_since_snapshot = 0;
        Ok(image.len())
    }
}

fn single(rows: &[shoal_pg::Row]) -> Result<&shoal_pg::Row, MetaLogError> {
    match rows {
        [row] => Ok(row),
        _ => Err(MetaLogError::Database {
            message: format!("expected one row, PostgreSQL returned {}", rows.len()),
            transient: false,
        }),
    }
}

fn fenced(seq: i64) -> MetaLogError {
    MetaLogError::Fenced(format!(
        "another broker took the coordinator's writer role; row {seq} of coordinator_log is \
         not this broker's to write"
    ))
}

fn db(e: PgError) -> MetaLogError {
    MetaLogError::Database {
        message: e.to_string(),
        transient: e.is_transient(),
    }
}
