//! Record batches for the load: one batch is encoded (and compressed) once per partition, then
//! each send copies it and stamps the current time into its header, so records carry their send
//! time (for end-to-end latency) without re-encoding the records. The batch layout is
//! `shoal_wal::batch`'s.

use bytes::{Bytes, BytesMut};
use shoal_wal::batch::{stamp_create_time, BatchBuilder, BatchHeader};
use shoal_wal::decompress::Codec;

use crate::BenchError;

pub fn compression(name: &str) -> Result<Codec, BenchError> {
    Codec::from_name(name).ok_or_else(|| BenchError::Usage(format!("unknown compression {name}")))
}

/// A batch of `records` records of `message_bytes` each (pseudo-random, so compression has
/// something realistic to do: half repeating text, half noise), as a producer that is not
/// idempotent sends it; with `schema_id`, each value starts with Confluent's wire-format
/// prefix for it.
pub fn template(
    records: usize,
    message_bytes: usize,
    codec: Codec,
    seed: u64,
    schema_id: Option<i32>,
) -> Result<Bytes, BenchError> {
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut batch = BatchBuilder::new(0);
    for _ in 0..records {
        let mut value: Vec<u8> = (0..message_bytes)
            .map(|j| {
                if j % 2 == 0 {
                    b"shoal-bench "[j % 12]
                } else {
                    next() as u8
                }
            })
            .collect();
        if let Some(id) = schema_id {
            let prefix = shoal_registry::wire::prefix(id);
            let end = prefix.len().min(value.len());
            value[..end].copy_from_slice(&prefix[..end]);
        }
        batch = batch.record(0, None, Some(&value), &[]);
    }
    let batch = batch
        .build(codec)
        .map_err(|e| BenchError::Protocol(e.to_string()))?;
    Ok(Bytes::from(batch))
}

/// A copy of `template` whose records all carry `timestamp_ms`.
pub fn stamped(template: &Bytes, timestamp_ms: i64) -> Bytes {
    let mut batch = BytesMut::from(&template[..]);
    stamp_create_time(&mut batch, timestamp_ms);
    batch.freeze()
}

/// (base offset, record count, first timestamp, bytes) of each whole batch in a fetched record
/// set.
pub fn batches_in(records: &[u8]) -> impl Iterator<Item = (i64, i64, i64, usize)> + '_ {
    let mut pos = 0;
    std::iter::from_fn(move || {
        let header = BatchHeader::parse(records.get(pos..)?).ok()?;
        pos += header.size_bytes;
        Some((
            header.base_offset,
            header.offset_count(),
            header.base_timestamp,
            header.size_bytes,
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamping_keeps_the_batch_valid() {
        let t = template(10, 100, Codec::None, 7, None).unwrap();
        let b = stamped(&t, 1_700_000_000_123);
        let header = BatchHeader::parse_validated(&b).expect("a valid batch");
        assert_eq!(header.base_sequence, -1);
        assert_eq!(header.max_timestamp, 1_700_000_000_123);
        let parsed: Vec<_> = batches_in(&b).collect();
        assert_eq!(parsed, vec![(0, 10, 1_700_000_000_123, b.len())]);
    }
}
