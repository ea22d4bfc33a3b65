//! The coordinator's log in PostgreSQL: each group-committed round's frames are one row, in
//! sequence, written only by the broker holding the writer epoch; snapshots are rows too.
//! The state machine is the local back end's, so both back ends decide every command the same
//! way; PostgreSQL makes the decisions durable, replicated and shared. A broker that takes the
//! writer role bumps the epoch, and a row is only inserted while its writer's epoch is current
//! (checked under a row lock in the same statement), so a fenced broker cannot append after
//! the new writer has read the log.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use shoal_pg::{migrations, Connection, Migration, Param, PgConfig, PgError};

use crate::frames::scan_frames;
use crate::log_backend::Durable;
use crate::recovery::RecoveryStats;
use crate::state::CoordinatorState;
use crate::CoordinatorError;

pub const MIGRATIONS: [Migration; 1] = [Migration {
    version: 1,
    name: "coordinator log",
    sql: include_str!("../migrations/0001_coordinator_log.sql"),
}];

/// Log rows read per query during recovery, so no answer grows with the log.
const RECOVERY_PAGE_ROWS: i64 = 1000;
/// A snapshot is stored in parts of at most this many bytes, each well within one bytea
/// value and the client's message limit.
const SNAPSHOT_PART_BYTES: usize = 32 << 20;
/// Retrying an append whose outcome is unknown: first pause and the longest one.
const RETRY_FIRST: Duration = Duration::from_millis(50);
const RETRY_MAX: Duration = Duration::from_secs(5);
/// The most appends a writer keeps in flight (one per pooled connection), so rows a crash
/// left after a missing one can only be this close to it.
pub const MAX_APPENDS_IN_FLIGHT: usize = 16;

pub struct PostgresLog {
    writer: Rc<Writer>,
    next_seq: i64,
    bytes_since_snapshot: u64,
}

/// What every append in flight shares: the writer's epoch and its idle connections.
struct Writer {
    config: PgConfig,
    epoch: i64,
    idle: RefCell<Vec<Connection>>,
}

impl PostgresLog {
    /// Migrates the schema, takes the writer role (fencing any earlier writer) and rebuilds
    /// the state from the newest snapshot and the rows after it.
    pub async fn open(
        config: &PgConfig,
        holder: &str,
    ) -> Result<(CoordinatorState, PostgresLog, RecoveryStats), CoordinatorError> {
        let started = Instant::now();
        let mut connection = Connection::connect(config).await.map_err(db)?;
        migrations::apply(&mut connection, &MIGRATIONS)
            .await
            .map_err(db)?;
        // Appends in flight hold the writer row FOR SHARE, so this waits for the previous
        // writer's to finish, and none of its later ones can match the new epoch.
        let rows = connection
            .query(
                "INSERT INTO coordinator_writer (id, epoch, holder) VALUES (1, 1, $1) \
                 ON CONFLICT (id) DO UPDATE SET epoch = coordinator_writer.epoch + 1, \
                 holder = $1, since = now() RETURNING epoch",
                &[Param::Text(holder)],
            )
            .await
            .map_err(db)?;
        let epoch = single(&rows)?.i64(0).map_err(db)?;
        let (mut state, snapshot_seq) = read_newest_snapshot(&mut connection).await?;
        let mut stats = RecoveryStats {
            snapshot_generation: snapshot_seq.map(|s| s as u64),
            ..RecoveryStats::default()
        };
        let mut last_seq = snapshot_seq.unwrap_or(0);
        let mut bytes_since_snapshot = 0u64;
        'pages: loop {
            let rows = connection
                .query(
                    "SELECT seq, frames, crc FROM coordinator_log WHERE seq > $1 \
                     ORDER BY seq LIMIT $2",
                    &[Param::I64(last_seq), Param::I64(RECOVERY_PAGE_ROWS)],
                )
                .await
                .map_err(db)?;
            for row in &rows {
                let seq = row.i64(0).map_err(db)?;
                if seq != last_seq + 1 {
                    drop_rows_after_gap(&mut connection, epoch, last_seq).await?;
                    break 'pages;
                }
                let frames = row.bytes(1).map_err(db)?.cloned().unwrap_or_default();
                check_crc("coordinator_log", seq, &frames, row.i64(2).map_err(db)?)?;
                let scan = scan_frames(&frames);
                if let Some(damage) = scan.damage {
                    return Err(CoordinatorError::Damaged(format!(
                        "coordinator_log row {seq}: {damage:?}"
                    )));
                }
                stats.records_replayed += scan.records.len();
                for record in &scan.records {
                    state.apply(record);
                }
                bytes_since_snapshot += frames.len() as u64;
                last_seq = seq;
            }
            if (rows.len() as i64) < RECOVERY_PAGE_ROWS {
                break;
            }
        }
        stats.elapsed_ms = started.elapsed().as_millis();
        let writer = Writer {
            config: config.clone(),
            epoch,
            idle: RefCell::new(vec![connection]),
        };
        let log = PostgresLog {
            writer: Rc::new(writer),
            next_seq: last_seq + 1,
            bytes_since_snapshot,
        };
        Ok((state, log, stats))
    }

    pub fn epoch(&self) -> i64 {
        self.writer.epoch
    }

    /// Rounds that may be in flight at once: one per pooled connection.
    pub fn appends_in_flight(&self) -> usize {
        self.writer.config.pool_size.clamp(1, MAX_APPENDS_IN_FLIGHT)
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

    /// Stores `state` as the snapshot after every appended row and drops the rows and older
    /// snapshots it covers, in one transaction, while this broker is still the writer. Only
    /// called with no append in flight, so `state` is exactly what the rows hold.
    pub async fn write_snapshot(
        &mut self,
        state: &CoordinatorState,
    ) -> Result<usize, CoordinatorError> {
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
                    "DELETE FROM coordinator_log WHERE seq <= $1",
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

impl Writer {
    /// Makes `frames` row `seq`. An append whose outcome is unknown (a timeout, a lost
    /// connection, PostgreSQL restarting) is settled by reading the row back on a new
    /// connection, and retried with backoff until PostgreSQL answers.
    async fn append(&self, seq: i64, frames: &[u8]) -> Result<(), CoordinatorError> {
        let crc = crc32c::crc32c(frames) as i64;
        let mut pause = RETRY_FIRST;
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
                    glommio::timer::sleep(pause).await;
                    pause = (pause * 2).min(RETRY_MAX);
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
    async fn take(&self) -> Result<Connection, PgError> {
        let idle = self.idle.borrow_mut().pop();
        match idle {
            Some(connection) if !connection.is_broken() => Ok(connection),
            _ => Connection::connect(&self.config).await,
        }
    }

    /// A broken connection is dropped; the next take opens a fresh one.
    fn give_back(&self, connection: Connection) {
        let mut idle = self.idle.borrow_mut();
        if !connection.is_broken() && idle.len() < self.config.pool_size.max(1) {
            idle.push(connection);
        }
    }
}

/// A writer that crashed with appends in flight can leave rows after one that never
/// committed. Rounds are acknowledged in order, so nothing from the gap on was acknowledged:
/// those rows are dropped (as the local log cuts a torn tail). Rows further away than any
/// writer keeps in flight cannot come from that and mean damage.
async fn drop_rows_after_gap(
    connection: &mut Connection,
    epoch: i64,
    last_seq: i64,
) -> Result<(), CoordinatorError> {
    let rows = connection
        .query(
            "SELECT count(*), max(seq) FROM coordinator_log WHERE seq > $1",
            &[Param::I64(last_seq)],
        )
        .await
        .map_err(db)?;
    let row = single(&rows)?;
    let (count, max_seq) = (row.i64(0).map_err(db)?, row.i64(1).map_err(db)?);
    if max_seq - last_seq > MAX_APPENDS_IN_FLIGHT as i64 {
        return Err(CoordinatorError::Damaged(format!(
            "coordinator_log has no row {} but rows up to {max_seq}: rows are missing",
            last_seq + 1
        )));
    }
    let dropped = connection
        .execute(
            "WITH writer AS (SELECT epoch FROM coordinator_writer WHERE id = 1 FOR SHARE) \
             DELETE FROM coordinator_log USING writer \
             WHERE seq > $1 AND writer.epoch = $2",
            &[Param::I64(last_seq), Param::I64(epoch)],
        )
        .await
        .map_err(db)?;
    if dropped as i64 != count {
        return Err(fenced(last_seq + 1));
    }
    tracing::warn!(
        after = last_seq,
        dropped,
        "coordinator_log rows after a missing one were never acknowledged; dropped"
    );
    Ok(())
}

async fn read_newest_snapshot(
    connection: &mut Connection,
) -> Result<(CoordinatorState, Option<i64>), CoordinatorError> {
    let newest = connection
        .query("SELECT max(last_seq) FROM coordinator_snapshots", &[])
        .await
        .map_err(db)?;
    if single(&newest)?.bytes(0).map_err(db)?.is_none() {
        return Ok((CoordinatorState::default(), None));
    }
    let last_seq = single(&newest)?.i64(0).map_err(db)?;
    let damaged = |what: String| {
        CoordinatorError::Damaged(format!("coordinator_snapshots {last_seq}: {what}"))
    };
    // One part per query: every answer stays within the client's message limit.
    let mut image = Vec::new();
    let mut parts = 1;
    let mut part = 0;
    while part < parts {
        let rows = connection
            .query(
                "SELECT parts, bytes, crc FROM coordinator_snapshots \
                 WHERE last_seq = $1 AND part = $2",
                &[Param::I64(last_seq), Param::I32(part)],
            )
            .await
            .map_err(db)?;
        let Some(row) = rows.first() else {
            return Err(damaged(format!("part {part} of {parts} is missing")));
        };
        let declared = row.i64(0).map_err(db)? as i32;
        if part > 0 && declared != parts {
            return Err(damaged(format!(
                "part {part} says {declared} parts, not {parts}"
            )));
        }
        parts = declared;
        let bytes = row.bytes(1).map_err(db)?.cloned().unwrap_or_default();
        check_crc(
            "coordinator_snapshots",
            last_seq,
            &bytes,
            row.i64(2).map_err(db)?,
        )?;
        image.extend_from_slice(&bytes);
        part += 1;
    }
    Ok((CoordinatorState::decode_snapshot(&image)?, Some(last_seq)))
}

fn check_crc(table: &str, key: i64, bytes: &[u8], stored: i64) -> Result<(), CoordinatorError> {
    let computed = crc32c::crc32c(bytes) as i64;
    if computed != stored {
        return Err(CoordinatorError::Damaged(format!(
            "{table} row {key}: CRC {computed:#x} of its bytes differs from the stored {stored:#x}"
        )));
    }
    Ok(())
}

fn single(rows: &[shoal_pg::Row]) -> Result<&shoal_pg::Row, CoordinatorError> {
    match rows {
        [row] => Ok(row),
        _ => Err(CoordinatorError::Database(format!(
            "expected one row, PostgreSQL returned {}",
            rows.len()
        ))),
    }
}

fn fenced(seq: i64) -> CoordinatorError {
    CoordinatorError::Fenced(format!(
        "another broker took the coordinator's writer role; row {seq} of coordinator_log is \
         not this broker's to write"
    ))
}

fn db(e: PgError) -> CoordinatorError {
    CoordinatorError::Database(e.to_string())
}
