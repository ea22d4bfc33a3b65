//! A stored batch rebuilt with only some of its records, as Kafka's log cleaner rebuilds
//! them: the header is kept (base and last offset, timestamps, producer fields, codec) but
//! for the record count, the length and the CRC, and the kept records are copied as encoded,
//! so each keeps its offset delta and timestamp delta. Offsets never move; a consumer sees
//! a gap where records were dropped.

use crate::batch::layout::{put_i32, RECORD_COUNT_AT};
use crate::batch::{patch_base_offset, reseal, set_batch_length, BatchHeader, BATCH_HEADER_BYTES};
use crate::compress::compress;
use crate::decompress::Codec;
use crate::records::KeyedRecord;
use crate::WalError;

/// `batch` with only `kept` of its records (a subset of its `keyed_records`, in order) and
/// its base offset set to `base_offset`; None when nothing is kept.
pub fn rebuild_batch(
    batch: &[u8],
    header: &BatchHeader,
    kept: &[KeyedRecord<'_>],
    base_offset: i64,
) -> Result<Option<Vec<u8>>, WalError> {
    if kept.is_empty() {
        return Ok(None);
    }
    let count = i32::try_from(kept.len()).map_err(|_| WalError::InvalidRecordCount(-1))?;
    let inflated_bytes: usize = kept.iter().map(|r| r.encoded.len()).sum();
    let mut records = Vec::with_capacity(inflated_bytes);
    for record in kept {
        records.extend_from_slice(record.encoded);
    }
    let codec = Codec::from_id(header.compression_codec())?;
    let payload = match codec {
        Codec::None => records,
        _ => compress(codec, &records)?,
    };
    let mut out = Vec::with_capacity(BATCH_HEADER_BYTES + payload.len());
    out.extend_from_slice(&batch[..BATCH_HEADER_BYTES]);
    out.extend_from_slice(&payload);
    set_batch_length(&mut out)?;
    put_i32(&mut out, RECORD_COUNT_AT, count);
    patch_base_offset(&mut out, base_offset);
    reseal(&mut out);
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::{encode_record, BatchBuilder};
    use crate::records::{first_record_at_or_after, inflate_payload, keyed_records};

    /// A record's key and value; None is null.
    type KeyValue<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

    /// A batch of records with offset deltas 0.. and timestamp deltas 10 each.
    fn keyed_batch(records: &[KeyValue<'_>], codec: Codec) -> Vec<u8> {
        let mut body = Vec::new();
        for (i, (key, value)) in records.iter().enumerate() {
            encode_record(&mut body, i as i32, i as i64 * 10, *key, *value, &[]);
        }
        BatchBuilder::new(1000)
            .raw_records(records.len() as i32, &body)
            .max_timestamp(1000 + 10 * (records.len() as i64 - 1))
            .build(codec)
            .unwrap()
    }

    #[test]
    fn a_rebuilt_batch_keeps_offsets_timestamps_and_codec_with_fewer_records() {
        let input: Vec<KeyValue<'_>> = vec![
            (Some(b"a"), Some(b"1")),
            (Some(b"b"), Some(b"2")),
            (Some(b"a"), None),
            (Some(b"c"), Some(b"3")),
        ];
        for codec in [
            Codec::None,
            Codec::Gzip,
            Codec::Snappy,
            Codec::Lz4,
            Codec::Zstd,
        ] {
            let batch = keyed_batch(&input, codec);
            let header = BatchHeader::parse_validated(&batch).unwrap();
            let inflated = inflate_payload(&batch, &header, 1 << 20).unwrap();
            let records = keyed_records(&inflated, &header).unwrap();
            assert_eq!(records.len(), 4);
            assert_eq!(records[2].key, Some(&b"a"[..]));
            assert!(records[2].is_tombstone && !records[1].is_tombstone);
            let kept = [records[1].clone(), records[3].clone()];
            let rebuilt = rebuild_batch(&batch, &header, &kept, 500).unwrap().unwrap();
            let h = BatchHeader::parse_validated(&rebuilt).expect("a valid batch");
            assert_eq!(h.base_offset, 500);
            assert_eq!((h.record_count, h.last_offset_delta), (2, 3), "{codec:?}");
            assert_eq!(h.compression_codec(), codec.id());
            assert_eq!(
                (h.base_timestamp, h.max_timestamp),
                (header.base_timestamp, header.max_timestamp)
            );
            let inflated = inflate_payload(&rebuilt, &h, 1 << 20).unwrap();
            let again = keyed_records(&inflated, &h).unwrap();
            let deltas: Vec<i32> = again.iter().map(|r| r.offset_delta).collect();
            assert_eq!(deltas, [1, 3]);
            assert_eq!(again[1].key, Some(&b"c"[..]));
            // Readers of stored batches find records by their real offsets and times.
            let found = first_record_at_or_after(&rebuilt, &h, 1015, 1 << 20).unwrap();
            assert_eq!(
                found.map(|p| (p.offset_delta, p.timestamp)),
                Some((3, 1030))
            );
        }
    }

    #[test]
    fn nothing_kept_is_no_batch_and_damage_is_an_error() {
        let batch = keyed_batch(&[(Some(b"a"), Some(b"1"))], Codec::None);
        let header = BatchHeader::parse_validated(&batch).unwrap();
        assert_eq!(rebuild_batch(&batch, &header, &[], 0).unwrap(), None);
        // A header claiming more records than its offsets can hold.
        let mut lying = header;
        lying.record_count = 5;
        let inflated = inflate_payload(&batch, &header, 1 << 20).unwrap();
        assert!(keyed_records(&inflated, &lying).is_err());
        // Records cut short.
        assert!(keyed_records(&inflated[..inflated.len() - 1], &header).is_err());
    }
}
