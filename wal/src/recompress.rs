//! Recompression for topics whose `compression.type` names a codec: a batch the producer
//! compressed otherwise is inflated (bounded, as validation bounds it) and compressed again,
//! its header kept but for the codec bits, the length and the CRC. Kafka does the same.

use std::io::{Read, Write};

use crate::batch::{reseal, BatchHeader, ATTR_COMPRESSION_MASK, BATCH_HEADER_BYTES};
use crate::decompress::{inflate, Codec};
use crate::WalError;

/// xerial snappy framing as snappy-java writes it: magic, version 1, compatible version 1,
/// then chunks of at most 32 KiB inflated, each after its compressed length.
const XERIAL_HEADER: &[u8] = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01";
const SNAPPY_CHUNK_BYTES: usize = 32 << 10;

/// The batch with its records compressed by `target`; its records may inflate to at most
/// `inflated_max` bytes (the caller has checked they do).
pub fn recompress_batch(
    batch: &[u8],
    header: &BatchHeader,
    target: Codec,
    inflated_max: usize,
) -> Result<Vec<u8>, WalError> {
    let from = Codec::from_id(header.compression_codec())?;
    let payload = &batch[BATCH_HEADER_BYTES..header.size_bytes];
    let mut records = Vec::new();
    inflate(from, payload, inflated_max)?
        .read_to_end(&mut records)
        .map_err(|e| WalError::CorruptCompression(e.to_string()))?;
    let compressed = compress(target, &records)?;
    let mut out = Vec::with_capacity(BATCH_HEADER_BYTES + compressed.len());
    out.extend_from_slice(&batch[..BATCH_HEADER_BYTES]);
    out.extend_from_slice(&compressed);
    let batch_length = i32::try_from(out.len() - 12)
        .map_err(|_| WalError::CorruptCompression("a recompressed batch over 2 GiB".into()))?;
    out[8..12].copy_from_slice(&batch_length.to_be_bytes());
    let attributes = (header.attributes & !ATTR_COMPRESSION_MASK) | target.id();
    out[21..23].copy_from_slice(&attributes.to_be_bytes());
    reseal(&mut out);
    Ok(out)
}

fn compress(codec: Codec, data: &[u8]) -> Result<Vec<u8>, WalError> {
    let failed = |e: std::io::Error| WalError::CorruptCompression(format!("compressing: {e}"));
    Ok(match codec {
        Codec::None => data.to_vec(),
        Codec::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(data).map_err(failed)?;
            e.finish().map_err(failed)?
        }
        Codec::Snappy => {
            let mut out = XERIAL_HEADER.to_vec();
            let mut encoder = snap::raw::Encoder::new();
            for chunk in data.chunks(SNAPPY_CHUNK_BYTES) {
                let block = encoder
                    .compress_vec(chunk)
                    .map_err(|e| WalError::CorruptCompression(e.to_string()))?;
                out.extend_from_slice(&(block.len() as u32).to_be_bytes());
                out.extend_from_slice(&block);
            }
            out
        }
        Codec::Lz4 => {
            let mut e = lz4::EncoderBuilder::new()
                .build(Vec::new())
                .map_err(failed)?;
            e.write_all(data).map_err(failed)?;
            let (out, result) = e.finish();
            result.map_err(failed)?;
            out
        }
        Codec::Zstd => zstd::stream::encode_all(data, 3).map_err(failed)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::tests::sample_batch;
    use crate::batch::validate_batches;
    use crate::records::check_records;
    use crate::records::tests::records;

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
            let converted = recompress_batch(&original, &header, target, 1 << 20).unwrap();
            let h = validate_batches(&converted).expect("a valid batch")[0];
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
            let back = recompress_batch(&converted, &h, Codec::None, 1 << 20).unwrap();
            assert_eq!(back, original, "{target:?}");
        }
    }

    #[test]
    fn a_batch_inflating_past_the_bound_is_refused() {
        let original = plain_batch(20);
        let header = validate_batches(&original).unwrap()[0];
        let zstd = recompress_batch(&original, &header, Codec::Zstd, 1 << 20).unwrap();
        let h = validate_batches(&zstd).unwrap()[0];
        assert!(recompress_batch(&zstd, &h, Codec::Lz4, 1000).is_err());
    }
}
