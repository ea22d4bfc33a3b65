//! Recompression for topics whose `compression.type` names a codec: a batch the producer
//! compressed otherwise is inflated (bounded, as validation bounds it) and compressed again,
//! its header kept but for the codec bits, the length and the CRC. Kafka does the same.

use std::io::{Read, Write};

use crate::batch::{BatchHeader, BATCH_HEADER_BYTES};
use crate::decompress::{inflate, Codec};
use crate::WalError;

const ATTR_COMPRESSION_MASK: i16 = 0x07;
/// The CRC covers everything from the attributes field to the end of the batch.
const CRC_COVERAGE_START: usize = 21;
/// xerial snappy framing as snappy-java writes it: magic, version 1, compatible version 1,
/// then chunks of at most 32 KiB inflated, each after its compressed length.
const XERIAL_HEADER: &[u8] = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01";
const SNAPPY_CHUNK_BYTES: usize = 32 << 10;

impl Codec {
    pub fn id(self) -> i16 {
        match self {
            Codec::None => 0,
            Codec::Gzip => 1,
            Codec::Snappy => 2,
            Codec::Lz4 => 3,
            Codec::Zstd => 4,
        }
    }
}

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
    let crc = crc32c::crc32c(&out[CRC_COVERAGE_START..]);
    out[17..21].copy_from_slice(&crc.to_be_bytes());
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
    use crate::batch::validate_batches;
    use crate::records::check_records;

    /// A batch of `count` uncompressed records of 100 bytes each.
    fn plain_batch(count: usize) -> Vec<u8> {
        let mut records = Vec::new();
        for i in 0..count {
            let value = vec![b'a' + (i % 26) as u8; 100];
            let mut body = vec![0u8]; // attributes
            body.push(0); // timestamp delta
            body.push((i as u8) << 1); // offset delta
            body.push(1); // key: null (-1)
            body.extend_from_slice(&[0xc8, 0x01]); // value length 100
            body.extend_from_slice(&value);
            body.push(0); // no headers
            put_varint(&mut records, body.len() as i64);
            records.extend_from_slice(&body);
        }
        let mut batch = Vec::new();
        batch.extend_from_slice(&0i64.to_be_bytes());
        batch.extend_from_slice(&((BATCH_HEADER_BYTES - 12 + records.len()) as i32).to_be_bytes());
        batch.extend_from_slice(&0i32.to_be_bytes());
        batch.push(2);
        batch.extend_from_slice(&[0; 4]);
        batch.extend_from_slice(&0i16.to_be_bytes());
        batch.extend_from_slice(&((count - 1) as i32).to_be_bytes());
        batch.extend_from_slice(&1_700_000_000_000i64.to_be_bytes());
        batch.extend_from_slice(&1_700_000_000_000i64.to_be_bytes());
        batch.extend_from_slice(&(-1i64).to_be_bytes());
        batch.extend_from_slice(&(-1i16).to_be_bytes());
        batch.extend_from_slice(&(-1i32).to_be_bytes());
        batch.extend_from_slice(&(count as i32).to_be_bytes());
        batch.extend_from_slice(&records);
        let crc = crc32c::crc32c(&batch[CRC_COVERAGE_START..]);
        batch[17..21].copy_from_slice(&crc.to_be_bytes());
        batch
    }

    fn put_varint(out: &mut Vec<u8>, v: i64) {
        let mut z = ((v << 1) ^ (v >> 63)) as u64;
        while z >= 0x80 {
            out.push((z as u8) | 0x80);
            z >>= 7;
        }
        out.push(z as u8);
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
