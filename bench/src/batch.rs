//! Record batches for the load: one batch is encoded (and compressed) once per partition, then
//! each send copies it and stamps the current time into its header, so records carry their send
//! time (for end-to-end latency) without re-encoding the records.

use bytes::{Bytes, BytesMut};
use indexmap::IndexMap;
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

use crate::BenchError;

const FIRST_TIMESTAMP_AT: usize = 27;
const MAX_TIMESTAMP_AT: usize = 35;
const CRC_AT: usize = 17;
const CRC_FROM: usize = 21;
const BASE_SEQUENCE_AT: usize = 53;

pub fn compression(name: &str) -> Result<Compression, BenchError> {
    Ok(match name {
        "none" => Compression::None,
        "gzip" => Compression::Gzip,
        "snappy" => Compression::Snappy,
        "lz4" => Compression::Lz4,
        "zstd" => Compression::Zstd,
        other => return Err(BenchError::Usage(format!("unknown compression {other}"))),
    })
}

/// A batch of `records` records of `message_bytes` each (pseudo-random, so compression has
/// something realistic to do: half repeating text, half noise).
pub fn template(
    records: usize,
    message_bytes: usize,
    codec: Compression,
    seed: u64,
) -> Result<Bytes, BenchError> {
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let records: Vec<Record> = (0..records)
        .map(|i| {
            let value: Vec<u8> = (0..message_bytes)
                .map(|j| {
                    if j % 2 == 0 {
                        b"shoal-bench "[j % 12]
                    } else {
                        next() as u8
                    }
                })
                .collect();
            Record {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: -1,
                producer_id: -1,
                producer_epoch: -1,
                timestamp_type: TimestampType::Creation,
                offset: i as i64,
                // kafka-protocol starts a new batch when offset - sequence changes; the
                // base sequence is reset to -1 below, as a non-idempotent producer sends.
                sequence: i as i32,
                timestamp: 0,
                key: None,
                value: Some(Bytes::from(value)),
                headers: IndexMap::new(),
            }
        })
        .collect();
    let mut buf = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression: codec,
    };
    RecordBatchEncoder::encode(&mut buf, records.iter(), &options)
        .map_err(|e| BenchError::Protocol(e.to_string()))?;
    buf[BASE_SEQUENCE_AT..BASE_SEQUENCE_AT + 4].copy_from_slice(&(-1i32).to_be_bytes());
    let batch = buf.freeze();
    let whole: Vec<_> = batches_in(&batch).collect();
    if whole.len() != 1 || whole[0].3 != batch.len() {
        return Err(BenchError::Protocol(
            "the template did not encode as one batch".into(),
        ));
    }
    Ok(stamped(&batch, 0))
}

/// A copy of `template` whose records all carry `timestamp_ms`.
pub fn stamped(template: &Bytes, timestamp_ms: i64) -> Bytes {
    let mut batch = BytesMut::from(&template[..]);
    batch[FIRST_TIMESTAMP_AT..FIRST_TIMESTAMP_AT + 8].copy_from_slice(&timestamp_ms.to_be_bytes());
    batch[MAX_TIMESTAMP_AT..MAX_TIMESTAMP_AT + 8].copy_from_slice(&timestamp_ms.to_be_bytes());
    let crc = crc32c(&batch[CRC_FROM..]);
    batch[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
    batch.freeze()
}

/// (record count, first timestamp, bytes) of each whole batch in a fetched record set.
pub fn batches_in(records: &[u8]) -> impl Iterator<Item = (i64, i64, i64, usize)> + '_ {
    let mut pos = 0;
    std::iter::from_fn(move || {
        if records.len() - pos < 61 {
            return None;
        }
        let b = &records[pos..];
        let len = i32::from_be_bytes(b[8..12].try_into().ok()?) as usize + 12;
        if len < 61 || len > b.len() {
            return None;
        }
        let base_offset = i64::from_be_bytes(b[0..8].try_into().ok()?);
        let last_delta = i32::from_be_bytes(b[23..27].try_into().ok()?) as i64;
        let first_ts = i64::from_be_bytes(b[27..35].try_into().ok()?);
        pos += len;
        Some((base_offset, last_delta + 1, first_ts, len))
    })
}

fn crc32c(data: &[u8]) -> u32 {
    crc32c_impl::crc32c(data)
}

mod crc32c_impl {
    pub use ::crc32c::crc32c;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamping_keeps_the_batch_valid() {
        let t = template(10, 100, Compression::None, 7).unwrap();
        assert_eq!(i32::from_be_bytes(t[53..57].try_into().unwrap()), -1);
        let b = stamped(&t, 1_700_000_000_123);
        let crc = u32::from_be_bytes(b[17..21].try_into().unwrap());
        assert_eq!(crc, crc32c(&b[21..]));
        let parsed: Vec<_> = batches_in(&b).collect();
        assert_eq!(parsed, vec![(0, 10, 1_700_000_000_123, b.len())]);
    }
}
