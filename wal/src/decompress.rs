//! Streaming decompression of record-batch payloads, each codec behind `std::io::Read`, with
//! every buffer bounded: nothing is inflated whole into memory, and a payload may not inflate
//! past the caller's limit (a 269 KB zstd batch that inflates to 8 GiB is refused at the
//! limit, having used a few MiB).

use std::io::{self, Read};

use crate::WalError;

/// Kafka's codec ids (the low three bits of a batch's attributes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    None,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

impl Codec {
    /// Every codec Kafka defines, in id order.
    pub const ALL: [Codec; 5] = [
        Codec::None,
        Codec::Gzip,
        Codec::Snappy,
        Codec::Lz4,
        Codec::Zstd,
    ];

    pub fn id(self) -> i16 {
        match self {
            Codec::None => 0,
            Codec::Gzip => 1,
            Codec::Snappy => 2,
            Codec::Lz4 => 3,
            Codec::Zstd => 4,
        }
    }

    /// Kafka's name for it, as `compression.type` and the clients' settings spell it.
    pub fn name(self) -> &'static str {
        match self {
            Codec::None => "none",
            Codec::Gzip => "gzip",
            Codec::Snappy => "snappy",
            Codec::Lz4 => "lz4",
            Codec::Zstd => "zstd",
        }
    }

    /// The codec Kafka calls `name`.
    pub fn from_name(name: &str) -> Option<Codec> {
        Codec::ALL.into_iter().find(|c| c.name() == name)
    }

    pub fn from_id(id: i16) -> Result<Codec, WalError> {
        Ok(match id {
            0 => Codec::None,
            1 => Codec::Gzip,
            2 => Codec::Snappy,
            3 => Codec::Lz4,
            4 => Codec::Zstd,
            other => return Err(WalError::UnknownCodec(other)),
        })
    }
}

/// zstd's window may be at most 2^this bytes: a frame declaring more is refused, so a header
/// cannot make the decoder reserve gigabytes. Producers' defaults use far less.
const ZSTD_WINDOW_LOG_MAX: u32 = 25;
/// One xerial snappy chunk (snappy-java writes 32 KiB ones) may inflate to at most this.
const SNAPPY_CHUNK_MAX_BYTES: usize = 8 << 20;
const XERIAL_MAGIC: &[u8] = b"\x82SNAPPY\x00";

/// A reader of `payload` inflated with `codec`, failing once more than `limit` bytes come out.
pub fn inflate<'a>(
    codec: Codec,
    payload: &'a [u8],
    limit: usize,
) -> Result<Box<dyn Read + 'a>, WalError> {
    let reader: Box<dyn Read + 'a> = match codec {
        Codec::None => Box::new(payload),
        Codec::Gzip => Box::new(flate2::read::GzDecoder::new(payload)),
        Codec::Snappy => Box::new(SnappyReader::new(payload, limit)?),
        Codec::Lz4 => Box::new(lz4::Decoder::new(payload).map_err(corrupt)?),
        Codec::Zstd => {
            let mut decoder = zstd::stream::read::Decoder::with_buffer(payload).map_err(corrupt)?;
            decoder
                .window_log_max(ZSTD_WINDOW_LOG_MAX)
                .map_err(corrupt)?;
            Box::new(decoder)
        }
    };
    Ok(Box::new(Capped {
        inner: reader,
        left: limit,
    }))
}

fn corrupt(e: io::Error) -> WalError {
    WalError::CorruptCompression(e.to_string())
}

/// Fails a read that would go past the limit, rather than ending quietly.
struct Capped<R> {
    inner: R,
    left: usize,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            // Anything more is over the limit.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "inflates past the limit",
                )),
            };
        }
        let take = buf.len().min(self.left);
        let n = self.inner.read(&mut buf[..take])?;
        self.left -= n;
        Ok(n)
    }
}

/// Snappy as Kafka writes it: snappy-java's xerial framing (a magic header, then chunks each
/// prefixed with its compressed length), or one raw snappy block from other clients.
struct SnappyReader<'a> {
    rest: &'a [u8],
    chunk: Vec<u8>,
    at: usize,
    raw: bool,
    limit: usize,
}

impl<'a> SnappyReader<'a> {
    fn new(payload: &'a [u8], limit: usize) -> Result<SnappyReader<'a>, WalError> {
        let xerial = payload.starts_with(XERIAL_MAGIC);
        let rest = if xerial {
            // Magic, then two int32 versions.
            payload
                .get(XERIAL_MAGIC.len() + 8..)
                .ok_or_else(|| WalError::CorruptCompression("snappy header cut short".into()))?
        } else {
            payload
        };
        Ok(SnappyReader {
            rest,
            chunk: Vec::new(),
            at: 0,
            raw: !xerial,
            limit,
        })
    }

    fn next_chunk(&mut self) -> io::Result<bool> {
        if self.rest.is_empty() {
            return Ok(false);
        }
        let block = if self.raw {
            std::mem::take(&mut self.rest)
        } else {
            let Some((len, rest)) = self.rest.split_first_chunk::<4>() else {
                return Err(invalid("snappy chunk length cut short"));
            };
            let len = u32::from_be_bytes(*len) as usize;
            if len > rest.len() {
                return Err(invalid("snappy chunk longer than the payload"));
            }
            let (block, rest) = rest.split_at(len);
            self.rest = rest;
            block
        };
        let size = snap::raw::decompress_len(block).map_err(|e| invalid(&e.to_string()))?;
        let max = if self.raw {
            self.limit
        } else {
            SNAPPY_CHUNK_MAX_BYTES
        };
        if size > max {
            return Err(invalid("snappy chunk inflates past the limit"));
        }
        self.chunk.resize(size, 0);
        snap::raw::Decoder::new()
            .decompress(block, &mut self.chunk)
            .map_err(|e| invalid(&e.to_string()))?;
        self.at = 0;
        Ok(true)
    }
}

impl Read for SnappyReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.chunk.len() {
            if !self.next_chunk()? {
                return Ok(0);
            }
        }
        let n = buf.len().min(self.chunk.len() - self.at);
        buf[..n].copy_from_slice(&self.chunk[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

fn invalid(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codecs_are_found_by_kafkas_names() {
        for codec in Codec::ALL {
            assert_eq!(Codec::from_name(codec.name()), Some(codec));
        }
        assert_eq!(Codec::from_name("brotli"), None);
    }

    fn inflated(codec: Codec, payload: &[u8], limit: usize) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        inflate(codec, payload, limit)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?
            .read_to_end(&mut out)?;
        Ok(out)
    }

    fn compressed(codec: Codec, data: &[u8]) -> Vec<u8> {
        crate::compress::compress(codec, data).expect("compresses")
    }

    #[test]
    fn every_codec_inflates_and_stops_at_the_limit() {
        let data: Vec<u8> = (0..200_000u32)
            .flat_map(|i| (i % 7).to_be_bytes())
            .collect();
        for codec in Codec::ALL {
            let payload = compressed(codec, &data);
            assert_eq!(
                inflated(codec, &payload, data.len()).unwrap(),
                data,
                "{codec:?}"
            );
            assert!(
                inflated(codec, &payload, data.len() - 1).is_err(),
                "{codec:?}"
            );
            // Garbage claimed to be this codec is an error, not a panic.
            let garbage: Vec<u8> = (0..300).map(|i| (i * 31 % 251) as u8).collect();
            if codec != Codec::None {
                assert!(inflated(codec, &garbage, 1 << 20).is_err(), "{codec:?}");
            }
        }
        // Raw (unframed) snappy from non-Java clients.
        let raw = snap::raw::Encoder::new().compress_vec(&data).unwrap();
        assert_eq!(inflated(Codec::Snappy, &raw, data.len()).unwrap(), data);
        assert!(matches!(Codec::from_id(5), Err(WalError::UnknownCodec(5))));
    }

    #[test]
    fn a_bomb_is_refused_at_the_limit_without_inflating_it() {
        let zeros = vec![0u8; 64 << 20];
        let bomb = zstd::encode_all(&zeros[..], 19).unwrap();
        assert!(bomb.len() < 64 << 10, "{} bytes", bomb.len());
        assert!(inflated(Codec::Zstd, &bomb, 1 << 20).is_err());
    }
}
