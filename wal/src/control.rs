//! Transaction markers: the control batches that end a transaction in each partition it
//! wrote to (Kafka's EndTransactionMarker), built by the broker and recognised when stored.

use crate::batch::BATCH_HEADER_BYTES;

/// Attributes of a marker batch: transactional and control, uncompressed, CreateTime.
const MARKER_ATTRIBUTES: i16 = 0x10 | 0x20;
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
    let crc = crc32c::crc32c(&batch[21..]);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
    batch
}

/// For a control batch: Some(true) for a commit marker, Some(false) for an abort marker,
/// None when its first record is not a marker (other control types, or malformed).
pub fn marker_outcome(batch: &[u8]) -> Option<bool> {
    let mut reader = Varints {
        bytes: batch.get(BATCH_HEADER_BYTES..)?,
    };
    let _length = reader.varint()?;
    let _attributes = reader.take(1)?;
    let _timestamp_delta = reader.varint()?;
    let _offset_delta = reader.varint()?;
    if reader.varint()? < 4 {
        return None;
    }
    let key = reader.take(4)?;
    match i16::from_be_bytes([key[2], key[3]]) {
        CONTROL_TYPE_COMMIT => Some(true),
        CONTROL_TYPE_ABORT => Some(false),
        _ => None,
    }
}

struct Varints<'a> {
    bytes: &'a [u8],
}

impl<'a> Varints<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (taken, rest) = (self.bytes.get(..n)?, self.bytes.get(n..)?);
        self.bytes = rest;
        Some(taken)
    }

    /// A zigzag varint of at most 10 bytes.
    fn varint(&mut self) -> Option<i64> {
        let mut raw = 0u64;
        for i in 0..10 {
            let b = self.take(1)?[0];
            raw |= ((b & 0x7f) as u64) << (7 * i);
            if b & 0x80 == 0 {
                return Some((raw >> 1) as i64 ^ -((raw & 1) as i64));
            }
        }
        None
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
