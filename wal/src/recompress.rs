//! Recompression for topics whose `compression.type` names a codec: a batch the producer
//! compressed otherwise gets its records (inflated once, by the validation that checked them)
//! compressed again, its header kept but for the codec bits, the length and the CRC. Kafka
//! does the same.

use crate::batch::layout::{put_i16, ATTRIBUTES_AT, ATTR_COMPRESSION_MASK};
use crate::batch::{reseal, set_batch_length, BatchHeader, BATCH_HEADER_BYTES};
use crate::compress::compress;
use crate::decompress::Codec;
use crate::WalError;

/// The batch with its `records` (as `check_and_inflate_records` gave them) compressed by
/// `target`, and its new header: no second parse is needed.
pub fn recompress_batch(
    batch: &[u8],
    header: &BatchHeader,
    records: &[u8],
    target: Codec,
) -> Result<(Vec<u8>, BatchHeader), WalError> {
    let compressed = compress(target, records)?;
    let mut out = Vec::with_capacity(BATCH_HEADER_BYTES + compressed.len());
    out.extend_from_slice(&batch[..BATCH_HEADER_BYTES]);
    out.extend_from_slice(&compressed);
    set_batch_length(&mut out)?;
    let attributes = (header.attributes & !ATTR_COMPRESSION_MASK) | target.id();
    put_i16(&mut out, ATTRIBUTES_AT, attributes);
    let crc = reseal(&mut out);
    let converted = BatchHeader {
        size_bytes: out.len(),
        attributes,
        crc,
        ..*header
    };
    debug_assert_eq!(BatchHeader::parse_validated(&out).ok(), Some(converted));
    Ok((out, converted))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::tests::sample_batch;
    use crate::batch::validate_batches;
    use crate::records::tests::records;
    use crate::records::{check_and_inflate_records, check_records};

    /// A batch of `count` uncompressed records, each a 100-byte value.
    fn plain_batch(count: usize) -> Vec<u8> {
        let values: Vec<Vec<u8>> = (0..count)
            .map(|i| vec![b'a' + (i % 26) as u8; 100])
            .collect();
        let specs: Vec<(i64, i64, &[u8])> = values
            .iter()
            .enumerate()
            .map(|(i, v)| (0, i as i64, v.as_slice()))
            .collect();
        sample_batch(count as i32, &records(&specs))
    }

    #[test]
    fn every_codec_round_trips_to_a_valid_batch_with_the_same_records() {
        let original = plain_batch(20);
        let header = validate_batches(&original).unwrap()[0];
        for target in [
            Codec::Gzip,
            Codec::Snappy,
            Codec::Lz4,
            Codec::Zstd,
            Codec::None,
        ] {
            let (_, inflated) = check_and_inflate_records(&original, &header, 1 << 20).unwrap();
            let (converted, h) = recompress_batch(&original, &header, &inflated, target).unwrap();
            assert_eq!(validate_batches(&converted).expect("a valid batch")[0], h);
            assert_eq!(h.compression_codec(), target.id(), "{target:?}");
            assert_eq!(
                (h.record_count, h.max_timestamp),
                (20, header.max_timestamp)
            );
            check_records(&converted, &h, 1 << 20).expect("records parse");
            if target != Codec::None {
                assert!(
                    converted.len() < original.len() / 2,
                    "{target:?} compresses"
                );
            }
            // And back again: the same bytes as the original.
            let (_, inflated) = check_and_inflate_records(&converted, &h, 1 << 20).unwrap();
            let (back, _) = recompress_batch(&converted, &h, &inflated, Codec::None).unwrap();
            assert_eq!(back, original, "{target:?}");
        }
    }

    #[test]
    fn a_batch_inflating_past_the_bound_is_refused() {
        let original = plain_batch(20);
        let header = validate_batches(&original).unwrap()[0];
        let (_, inflated) = check_and_inflate_records(&original, &header, 1 << 20).unwrap();
        let (zstd, h) = recompress_batch(&original, &header, &inflated, Codec::Zstd).unwrap();
        assert!(matches!(
            check_and_inflate_records(&zstd, &h, 1000),
            Err(WalError::CorruptCompression(_))
        ));
    }
}
