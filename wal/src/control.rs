//! Transaction markers: the control batches that end a transaction in each partition it
//! wrote to (Kafka's EndTransactionMarker), built by the broker and recognised when stored.

use crate::batch::{reseal, ATTR_CONTROL, ATTR_TRANSACTIONAL, BATCH_HEADER_BYTES};
use crate::records::control_record_type;

/// Attributes of a marker batch: transactional and control, uncompressed, CreateTime.
const MARKER_ATTRIBUTES: i16 = ATTR_TRANSACTIONAL | ATTR_CONTROL;
const CONTROL_TYPE_ABORT: i16 = 0;
const CONTROL_TYPE_COMMIT: i16 = 1;

/// A one-record control batch committing (or aborting) `producer_id`'s transaction, at
/// base offset 0 (the coordinator assigns the real one).
pub fn marker_batch(producer_id: i64, producer_epoch: i16, commit: bool, now_ms: i64) -> Vec<u8> {
    let control_type = if commit {
        CONTROL_TYPE_COMMIT
    } else {
        CONTROL_TYPE_ABORT
    };
    // Record body: attributes, timestamp delta, offset delta, key (version, type), value
    // (version, coordinator epoch), no headers. Every varint here is a single byte.
    let mut body = vec![0u8, 0, 0, 4 << 1];
    body.extend_from_slice(&0i16.to_be_bytes());
    body.extend_from_slice(&control_type.to_be_bytes());
    body.push(6 << 1);
    body.extend_from_slice(&0i16.to_be_bytes());
    body.extend_from_slice(&0i32.to_be_bytes());
    body.push(0);
    let mut batch = Vec::with_capacity(BATCH_HEADER_BYTES + 1 + body.len());
    batch.extend_from_slice(&0i64.to_be_bytes());
    let batch_length = (BATCH_HEADER_BYTES - 12 + 1 + body.len()) as i32;
    batch.extend_from_slice(&batch_length.to_be_bytes());
    batch.extend_from_slice(&(-1i32).to_be_bytes());
    batch.push(2);
    batch.extend_from_slice(&[0; 4]);
    batch.extend_from_slice(&MARKER_ATTRIBUTES.to_be_bytes());
    batch.extend_from_slice(&0i32.to_be_bytes());
    batch.extend_from_slice(&now_ms.to_be_bytes());
    batch.extend_from_slice(&now_ms.to_be_bytes());
    batch.extend_from_slice(&producer_id.to_be_bytes());
    batch.extend_from_slice(&producer_epoch.to_be_bytes());
    batch.extend_from_slice(&(-1i32).to_be_bytes());
    batch.extend_from_slice(&1i32.to_be_bytes());
    batch.push((body.len() as u8) << 1);
    batch.extend_from_slice(&body);
    reseal(&mut batch);
    batch
}

/// For a control batch: Some(true) for a commit marker, Some(false) for an abort marker,
/// None when its first record is not a marker (other control types, or malformed).
pub fn marker_outcome(batch: &[u8]) -> Option<bool> {
    match control_record_type(batch)? {
        CONTROL_TYPE_COMMIT => Some(true),
        CONTROL_TYPE_ABORT => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::validate_batches;
    use crate::records::check_records;

    #[test]
    fn markers_are_valid_control_batches_that_say_their_outcome() {
        for commit in [true, false] {
            let batch = marker_batch(42, 3, commit, 1_700_000_000_000);
            let headers = validate_batches(&batch).expect("a valid batch");
            let h = headers[0];
            assert!(h.is_control() && h.is_transactional());
            assert_eq!(
                (h.producer_id, h.producer_epoch, h.offset_count()),
                (42, 3, 1)
            );
            check_records(&batch, &h, 1 << 20).expect("its record parses");
            assert_eq!(marker_outcome(&batch), Some(commit));
        }
        assert_eq!(marker_outcome(&[0; 10]), None);
        let batch = marker_batch(1, 0, true, 0);
        assert_eq!(marker_outcome(&batch[..BATCH_HEADER_BYTES + 5]), None);
    }
}
