//! A read_committed reader's walk over a Fetch answer's records: whole batches in order (a
//! batch cut short at the end is left for the next fetch), leaving out control batches and
//! the batches of transactions the answer lists as aborted, until their abort marker.

use std::collections::HashSet;

use crate::batch::LOG_OVERHEAD_BYTES;
use crate::control::marker_outcome;
use crate::BatchHeader;

/// Calls `keep` with each data batch a read_committed reader sees in `records` (from a
/// partition read at `position`), given the answer's aborted transactions as (producer id,
/// first offset). `keep` returns Some(offset) to stop there; otherwise the walk returns the
/// offset after the last whole batch (never less than `position`).
pub fn walk_committed(
    mut records: &[u8],
    mut position: i64,
    mut aborted: Vec<(i64, i64)>,
    mut keep: impl FnMut(&[u8], &BatchHeader) -> Result<Option<i64>, String>,
) -> Result<i64, String> {
    aborted.sort_by_key(|&(_, first_offset)| std::cmp::Reverse(first_offset));
    let mut aborting: HashSet<i64> = HashSet::new();
    while records.len() >= LOG_OVERHEAD_BYTES {
        let length = i32::from_be_bytes([records[8], records[9], records[10], records[11]]);
        let size =
            LOG_OVERHEAD_BYTES + usize::try_from(length).map_err(|_| "a negative batch length")?;
        if size > records.len() {
            break;
        }
        let (batch, rest) = records.split_at(size);
        records = rest;
        let header = BatchHeader::parse_validated(batch).map_err(|e| e.to_string())?;
        let next = header.base_offset + header.offset_count();
        while aborted.last().is_some_and(|&(_, first)| first < next) {
            let (producer_id, _) = aborted.pop().expect("just seen");
            aborting.insert(producer_id);
        }
        if header.is_control() {
            if marker_outcome(batch) == Some(false) {
                aborting.remove(&header.producer_id);
            }
        } else if !(header.is_transactional() && aborting.contains(&header.producer_id)) {
            if let Some(stop) = keep(batch, &header)? {
                return Ok(stop);
            }
        }
        position = position.max(next);
    }
    Ok(position)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::BatchBuilder;
    use crate::control::marker_batch;
    use crate::decompress::Codec;

    fn at(mut batch: Vec<u8>, base_offset: i64) -> Vec<u8> {
        crate::batch::patch_base_offset(&mut batch, base_offset);
        batch
    }

    fn data(producer_id: i64, transactional: bool, base_offset: i64) -> Vec<u8> {
        let mut builder = BatchBuilder::new(1).producer(producer_id, 0, 0);
        if transactional {
            builder = builder.transactional();
        }
        let batch = builder
            .record(1, None, Some(b"v"), &[])
            .build(Codec::None)
            .unwrap();
        at(batch, base_offset)
    }

    #[test]
    fn aborted_transactions_and_markers_are_left_out() {
        let mut records = Vec::new();
        records.extend(data(7, true, 0)); // aborted below
        records.extend(data(8, false, 1));
        records.extend(at(marker_batch(7, 0, false, 1), 2));
        records.extend(data(7, true, 3)); // a later transaction, committed
        records.extend(at(marker_batch(7, 0, true, 1), 4));
        let cut = data(8, false, 5);
        records.extend(&cut[..cut.len() - 1]);
        let mut kept = Vec::new();
        let next = walk_committed(&records, 0, vec![(7, 0)], |_, header| {
            kept.push(header.base_offset);
            Ok(None)
        })
        .unwrap();
        assert_eq!(kept, [1, 3]);
        assert_eq!(next, 5, "the batch cut short is read again");
        let stopped = walk_committed(&records, 0, vec![(7, 0)], |_, h| Ok(Some(h.base_offset)));
        assert_eq!(stopped.unwrap(), 1);
    }
}
