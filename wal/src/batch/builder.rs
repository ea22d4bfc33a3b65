//! Encodes v2 record batches: the records (timestamp, key, value, headers), then the header
//! around them, compressed with a codec and CRC-sealed. Transaction markers, the bench's load
//! and the tests all build their batches here.

use super::layout::*;
use crate::compress::compress;
use crate::decompress::Codec;
use crate::WalError;

/// A batch being built; `build` encodes it. Offsets start at 0 (the coordinator assigns the
/// real ones) and the producer fields say "no producer" until `producer` sets them.
#[derive(Debug, Clone)]
pub struct BatchBuilder {
    attributes: i16,
    base_timestamp: i64,
    max_timestamp: i64,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    record_count: i32,
    records: Vec<u8>,
}

/// One record header: a key and an optional value.
pub type RecordHeader<'a> = (&'a [u8], Option<&'a [u8]>);

impl BatchBuilder {
    /// An empty CreateTime batch whose records' timestamps count from `base_timestamp`.
    pub fn new(base_timestamp: i64) -> Self {
        BatchBuilder {
            attributes: 0,
            base_timestamp,
            max_timestamp: base_timestamp,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            record_count: 0,
            records: Vec::new(),
        }
    }

    pub fn producer(mut self, producer_id: i64, producer_epoch: i16, base_sequence: i32) -> Self {
        self.producer_id = producer_id;
        self.producer_epoch = producer_epoch;
        self.base_sequence = base_sequence;
        self
    }

    pub fn transactional(mut self) -> Self {
        self.attributes |= ATTR_TRANSACTIONAL;
        self
    }

    pub fn control(mut self) -> Self {
        self.attributes |= ATTR_CONTROL;
        self
    }

    /// Appends a record at `timestamp` (at or after the base timestamp), at the next offset.
    pub fn record(
        mut self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[RecordHeader],
    ) -> Self {
        let delta = timestamp - self.base_timestamp;
        encode_record(
            &mut self.records,
            self.record_count,
            delta,
            key,
            value,
            headers,
        );
        self.record_count += 1;
        self.max_timestamp = self.max_timestamp.max(timestamp);
        self
    }

    /// Records encoded elsewhere (tests build malformed ones), claimed to be `count`.
    pub fn raw_records(mut self, count: i32, encoded: &[u8]) -> Self {
        self.records.extend_from_slice(encoded);
        self.record_count = count;
        self
    }

    /// The header's max timestamp, where it must say other than the records do.
    pub fn max_timestamp(mut self, max_timestamp: i64) -> Self {
        self.max_timestamp = max_timestamp;
        self
    }

    /// The whole batch, its records compressed with `codec`.
    pub fn build(self, codec: Codec) -> Result<Vec<u8>, WalError> {
        let compressed;
        let payload = match codec {
            Codec::None => &self.records[..],
            _ => {
                compressed = compress(codec, &self.records)?;
                &compressed[..]
            }
        };
        let mut batch = vec![0u8; BATCH_HEADER_BYTES];
        batch.extend_from_slice(payload);
        set_batch_length(&mut batch)?;
        put_i32(&mut batch, PARTITION_LEADER_EPOCH_AT, -1);
        batch[MAGIC_AT] = MAGIC_V2 as u8;
        put_i16(&mut batch, ATTRIBUTES_AT, self.attributes | codec.id());
        put_i32(&mut batch, LAST_OFFSET_DELTA_AT, self.record_count - 1);
        put_i64(&mut batch, BASE_TIMESTAMP_AT, self.base_timestamp);
        put_i64(&mut batch, MAX_TIMESTAMP_AT, self.max_timestamp);
        put_i64(&mut batch, PRODUCER_ID_AT, self.producer_id);
        put_i16(&mut batch, PRODUCER_EPOCH_AT, self.producer_epoch);
        put_i32(&mut batch, BASE_SEQUENCE_AT, self.base_sequence);
        put_i32(&mut batch, RECORD_COUNT_AT, self.record_count);
        reseal(&mut batch);
        Ok(batch)
    }
}

/// Writes `batchLength` for a batch whose bytes are all in `batch`.
pub(crate) fn set_batch_length(batch: &mut [u8]) -> Result<(), WalError> {
    let length = i32::try_from(batch.len() - LOG_OVERHEAD_BYTES)
        .map_err(|_| WalError::CorruptCompression("a batch over 2 GiB".into()))?;
    put_i32(batch, BATCH_LENGTH_AT, length);
    Ok(())
}

/// Appends one v2 record (length-prefixed) with the given deltas from the batch's base.
pub fn encode_record(
    out: &mut Vec<u8>,
    offset_delta: i32,
    timestamp_delta: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[RecordHeader],
) {
    let mut body = vec![0u8]; // record attributes: unused
    put_varint(&mut body, timestamp_delta);
    put_varint(&mut body, offset_delta as i64);
    put_bytes(&mut body, key);
    put_bytes(&mut body, value);
    put_varint(&mut body, headers.len() as i64);
    for (name, value) in headers {
        put_bytes(&mut body, Some(name));
        put_bytes(&mut body, *value);
    }
    put_varint(out, body.len() as i64);
    out.extend_from_slice(&body);
}

fn put_bytes(out: &mut Vec<u8>, bytes: Option<&[u8]>) {
    match bytes {
        None => put_varint(out, -1),
        Some(b) => {
            put_varint(out, b.len() as i64);
            out.extend_from_slice(b);
        }
    }
}

/// A zig-zag varint, as Kafka's records use.
fn put_varint(out: &mut Vec<u8>, v: i64) {
    let mut n = ((v << 1) ^ (v >> 63)) as u64;
    while n >= 0x80 {
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::validate_batches;
    use crate::records::check_records;

    #[test]
    fn built_batches_validate_with_their_records() {
        for codec in Codec::ALL {
            let batch = BatchBuilder::new(1_000)
                .producer(7, 2, 40)
                .transactional()
                .record(1_000, Some(b"k"), Some(b"v"), &[(b"h", Some(b"x"))])
                .record(1_250, None, None, &[])
                .build(codec)
                .unwrap();
            let h = validate_batches(&batch).unwrap()[0];
            assert_eq!(h.compression_codec(), codec.id());
            assert_eq!((h.record_count, h.last_offset_delta), (2, 1));
            assert_eq!((h.base_timestamp, h.max_timestamp), (1_000, 1_250));
            assert_eq!(
                (h.producer_id, h.producer_epoch, h.base_sequence),
                (7, 2, 40)
            );
            assert!(h.is_transactional() && !h.is_control());
            let summary = check_records(&batch, &h, 1 << 20).unwrap();
            assert_eq!((summary.count, summary.max_timestamp), (2, 1_250));
        }
    }
}
