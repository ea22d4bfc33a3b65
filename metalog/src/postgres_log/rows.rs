//! Reading the log back: the newest snapshot, in parts, and rows after it, each checked.

use shoal_pg::{Connection, Param, Row};

use super::{db, fenced, single, MAX_APPENDS_IN_FLIGHT};
use crate::MetaLogError;
use shoal_coordinator::frames::scan_frames;
use shoal_coordinator::state::CoordinatorState;

/// Log rows read per query, so no answer grows with the log.
const PAGE_ROWS: i64 = 1000;

/// What replaying rows found.
#[derive(Default)]
pub(super) struct Replayed {
    /// The last row applied (the starting point when none was).
    pub last_seq: i64,
    pub records: usize,
    pub bytes: u64,
    /// The row after `last_seq` is missing while later ones exist.
    pub gap: bool,
}

/// The query for one page of rows after $1 ($2 rows at most).
pub(super) const PAGE_QUERY: &str =
    "SELECT seq, frames, crc FROM coordinator_log WHERE seq > $1 ORDER BY seq LIMIT $2";

pub(super) fn page_params(last_seq: &i64) -> [Param<'_>; 2] {
    [Param::I64(*last_seq), Param::I64(PAGE_ROWS)]
}

/// Applies to `state` every row after `last_seq`, in order, one page per query, each row's
/// CRC and frames checked; stops at a missing row.
pub(super) async fn replay_after(
    connection: &mut Connection,
    state: &mut CoordinatorState,
    last_seq: i64,
) -> Result<Replayed, MetaLogError> {
    let mut replayed = Replayed {
        last_seq,
        ..Replayed::default()
    };
    replay_pages(connection, state, &mut replayed, None).await?;
    Ok(replayed)
}

/// Applies `first_page` (rows after `replayed.last_seq`, read already) and the pages after it.
pub(super) async fn replay_pages(
    connection: &mut Connection,
    state: &mut CoordinatorState,
    replayed: &mut Replayed,
    mut first_page: Option<Vec<Row>>,
) -> Result<(), MetaLogError> {
    loop {
        let rows = match first_page.take() {
            Some(rows) => rows,
            None => connection
                .query(PAGE_QUERY, &page_params(&replayed.last_seq))
                .await
                .map_err(db)?,
        };
        for row in &rows {
            let seq = row.i64(0).map_err(db)?;
            if seq != replayed.last_seq + 1 {
                replayed.gap = true;
                return Ok(());
            }
            let frames = row.bytes(1).map_err(db)?.cloned().unwrap_or_default();
            check_crc("coordinator_log", seq, &frames, row.i64(2).map_err(db)?)?;
            let scan = scan_frames(&frames);
            if let Some(damage) = scan.damage {
                return Err(MetaLogError::Damaged(format!(
                    "coordinator_log row {seq}: {damage:?}"
                )));
            }
            replayed.records += scan.entries.len();
            for record in &scan.entries {
                state.apply(record);
            }
            replayed.bytes += frames.len() as u64;
            replayed.last_seq = seq;
        }
        if (rows.len() as i64) < PAGE_ROWS {
            return Ok(());
        }
    }
}

/// A writer that crashed with appends in flight can leave rows after one that never
/// committed. Rounds are acknowledged in order, so nothing from the gap on was acknowledged:
/// those rows are dropped (as the local log cuts a torn tail). Rows further away than any
/// writer keeps in flight cannot come from that and mean damage.
pub(super) async fn drop_rows_after_gap(
    connection: &mut Connection,
    epoch: i64,
    last_seq: i64,
) -> Result<(), MetaLogError> {
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
        return Err(MetaLogError::Damaged(format!(
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

pub(super) async fn read_newest_snapshot(
    connection: &mut Connection,
) -> Result<(CoordinatorState, Option<i64>), MetaLogError> {
    let newest = connection
        .query("SELECT max(last_seq) FROM coordinator_snapshots", &[])
        .await
        .map_err(db)?;
    if single(&newest)?.bytes(0).map_err(db)?.is_none() {
        return Ok((CoordinatorState::default(), None));
    }
    let last_seq = single(&newest)?.i64(0).map_err(db)?;
    let damaged =
        |what: String| MetaLogError::Damaged(format!("coordinator_snapshots {last_seq}: {what}"));
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

pub(super) fn check_crc(
    table: &str,
    key: i64,
    bytes: &[u8],
    stored: i64,
) -> Result<(), MetaLogError> {
    let computed = crc32c::crc32c(bytes) as i64;
    if computed != stored {
        return Err(MetaLogError::Damaged(format!(
            "{table} row {key}: CRC {computed:#x} of its bytes differs from the stored {stored:#x}"
        )));
    }
    Ok(())
}
