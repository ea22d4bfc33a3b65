//! Transaction markers: the control batches that end a transaction in each partition it
//! wrote to (Kafka's EndTransactionMarker), built by the broker and recognised when stored.

use crate::batch::BatchBuilder;
use crate::decompress::Codec;
use crate::records::control_record_type;

const CONTROL_TYPE_ABORT: i16 = 0;
const CONTROL_TYPE_COMMIT: i16 = 1;
/// The marker's key version and value version (EndTransactionMarker v0).
const MARKER_VERSION: i16 = 0;

/// A one-record control batch committing (or aborting) `producer_id`'s transaction, at
/// base offset 0 (the coordinator assigns the real one): transactional and control,
/// uncompressed, CreateTime.
pub fn marker_batch(producer_id: i64, producer_epoch: i16, commit: bool, now_ms: i64) -> Vec<u8> {
    let control_type = if commit {
        CONTROL_TYPE_COMMIT
    } else {
        CONTROL_TYPE_ABORT
    };
    let mut key = MARKER_VERSION.to_be_bytes().to_vec();
    key.extend_from_slice(&control_type.to_be_bytes());
    // Value: version, then the coordinator epoch (0: Shoal's coordinator has no epochs).
    let mut value = MARKER_VERSION.to_be_bytes().to_vec();
    value.extend_from_slice(&0i32.to_be_bytes());
    BatchBuilder::new(now_ms)
        .producer(producer_id, producer_epoch, -1)
        .transactional()
        .control()
        .record(now_ms, Some(&key), Some(&value), &[])
        .build(Codec::None)
        .expect("an uncompressed marker always encodes")
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
    use crate::batch::{validate_batches, BATCH_HEADER_BYTES};
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
