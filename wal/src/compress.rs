//! Compression of record-batch payloads with Kafka's codecs, as a recompressing broker and the
//! batch builder write them (snappy in the xerial framing snappy-java writes).

use std::io::Write;

use crate::decompress::Codec;
use crate::WalError;

/// xerial snappy framing as snappy-java writes it: magic, version 1, compatible version 1,
/// then chunks of at most 32 KiB inflated, each after its compressed length.
const XERIAL_HEADER: &[u8] = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01";
const SNAPPY_CHUNK_BYTES: usize = 32 << 10;

/// `data` compressed with `codec` (a copy for `Codec::None`).
pub fn compress(codec: Codec, data: &[u8]) -> Result<Vec<u8>, WalError> {
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
