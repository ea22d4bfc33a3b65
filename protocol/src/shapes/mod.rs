//! Every Kafka request is walked along its wire layout before it is decoded, to know what the
//! decoded request will occupy before any of it is allocated.
//!
//! The decoders (`crate::messages`) refuse any count larger than the bytes left, but a count
//! within them can still cost far more decoded than on the wire: a 1 MB request of one-byte
//! elements, each a struct of a hundred bytes in memory, decodes to 100 MB. `check` walks
//! the request as the decoder reads it — same fields in the same versions, known tagged fields
//! within the size they announce — refuses any count or length larger than the bytes left, and
//! sums what the decoded request will occupy (elements times their in-memory size), so the
//! broker charges it to its memory budget before decoding. The layouts (`requests.rs`) are
//! generated from Kafka's message specifications with the codecs, by
//! `scripts/gen_kafka_messages.py`; the tests below prove them equal to the decoders (and to
//! kafka-protocol's, where it has the version) on random valid requests.

mod requests;

pub use requests::request_shape;

/// How deep structs nest in any Kafka request is small; this bounds recursion regardless.
const DEPTH_MAX: usize = 16;
/// What kafka-protocol keeps per unknown tagged field (a map entry holding a `Bytes`).
const TAG_ENTRY_BYTES: usize = 64;

pub struct Shape {
    pub name: &'static str,
    pub versions: (i16, i16),
    /// Versions from this on end every struct with tagged fields.
    pub flexible_from: i16,
    pub fields: &'static [Field],
    /// Tagged fields kafka-protocol reads in place (the others it skips by their size).
    pub tags: &'static [Tag],
}

pub struct Field {
    pub name: &'static str,
    pub versions: (i16, i16),
    pub ty: Ty,
}

pub struct Tag {
    pub tag: u32,
    pub versions: (i16, i16),
    pub ty: Ty,
}

pub enum Ty {
    Fixed(usize),
    Bool,
    String,
    CompactString,
    Bytes,
    CompactBytes,
    Array {
        compact: bool,
        element: &'static Ty,
        /// What one decoded element occupies in memory.
        element_bytes: usize,
    },
    Struct(&'static Shape),
    /// A nullable struct: an `i8` (negative for null), then the struct.
    OptionStruct(&'static Shape),
}

fn within(versions: (i16, i16), version: i16) -> bool {
    versions.0 <= version && version <= versions.1
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ShapeError {
    #[error("{0} v{1} is not a version this request has")]
    Version(&'static str, i16),
    #[error("{what} in {shape} claims {claimed} but {left} bytes are left")]
    Overrun {
        shape: &'static str,
        what: &'static str,
        claimed: u64,
        left: usize,
    },
    #[error("negative {what} length {length} in {shape}")]
    Negative {
        shape: &'static str,
        what: &'static str,
        length: i64,
    },
    #[error("structs nested deeper than {DEPTH_MAX}")]
    TooDeep,
    #[error(
        "tagged field {tag} in {shape} announces {announced} bytes but its value takes {used}"
    )]
    TagSize {
        shape: &'static str,
        tag: u32,
        announced: usize,
        used: usize,
    },
}

/// What a request that passed will hold once decoded, beyond its own bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked {
    pub decoded_bytes: usize,
}

/// Walks `body` as the decoder reads a request of `shape` at `version`.
pub fn check(shape: &'static Shape, version: i16, body: &[u8]) -> Result<Checked, ShapeError> {
    if !within(shape.versions, version) {
        return Err(ShapeError::Version(shape.name, version));
    }
    let mut walk = Walk {
        rest: body,
        decoded_bytes: 0,
        version,
    };
    walk.structure(shape, 0)?;
    Ok(Checked {
        decoded_bytes: walk.decoded_bytes,
    })
}

struct Walk<'a> {
    rest: &'a [u8],
    decoded_bytes: usize,
    version: i16,
}

impl Walk<'_> {
    fn take(
        &mut self,
        shape: &'static Shape,
        what: &'static str,
        n: u64,
    ) -> Result<(), ShapeError> {
        if n > self.rest.len() as u64 {
            return Err(ShapeError::Overrun {
                shape: shape.name,
                what,
                claimed: n,
                left: self.rest.len(),
            });
        }
        self.rest = &self.rest[n as usize..];
        Ok(())
    }

    fn fixed<const N: usize>(&mut self, shape: &'static Shape) -> Result<[u8; N], ShapeError> {
        let Some((head, rest)) = self.rest.split_first_chunk::<N>() else {
            return Err(ShapeError::Overrun {
                shape: shape.name,
                what: "a fixed-size field",
                claimed: N as u64,
                left: self.rest.len(),
            });
        };
        self.rest = rest;
        Ok(*head)
    }

    /// kafka-protocol's unsigned varint: at most five bytes, high bits past 32 dropped.
    fn uvarint(&mut self, shape: &'static Shape) -> Result<u32, ShapeError> {
        let mut value = 0u32;
        for i in 0..5 {
            let [b] = self.fixed::<1>(shape)?;
            value |= ((b & 0x7f) as u32).wrapping_shl(i * 7);
            if b < 0x80 {
                break;
            }
        }
        Ok(value)
    }

    fn structure(&mut self, shape: &'static Shape, depth: usize) -> Result<(), ShapeError> {
        if depth > DEPTH_MAX {
            return Err(ShapeError::TooDeep);
        }
        for field in shape.fields {
            if within(field.versions, self.version) {
                self.value(shape, &field.ty, depth)?;
            }
        }
        if self.version < shape.flexible_from {
            return Ok(());
        }
        let count = self.uvarint(shape)?;
        for _ in 0..count {
            let tag = self.uvarint(shape)?;
            let size = self.uvarint(shape)?;
            let known = shape
                .tags
                .iter()
                .find(|t| t.tag == tag && within(t.versions, self.version));
            match known {
                // Read within exactly the bytes it announces, as the decoder reads it.
                Some(known) => {
                    let announced = size as usize;
                    if announced > self.rest.len() {
                        return Err(ShapeError::Overrun {
                            shape: shape.name,
                            what: "a tagged field",
                            claimed: announced as u64,
                            left: self.rest.len(),
                        });
                    }
                    let (body, rest) = self.rest.split_at(announced);
                    let mut inner = Walk {
                        rest: body,
                        decoded_bytes: 0,
                        version: self.version,
                    };
                    inner.value(shape, &known.ty, depth)?;
                    if !inner.rest.is_empty() {
                        return Err(ShapeError::TagSize {
                            shape: shape.name,
                            tag,
                            announced,
                            used: announced - inner.rest.len(),
                        });
                    }
                    self.decoded_bytes += inner.decoded_bytes;
                    self.rest = rest;
                }
                None => {
                    self.take(shape, "a tagged field", size as u64)?;
                    self.decoded_bytes += TAG_ENTRY_BYTES;
                }
            }
        }
        Ok(())
    }

    fn value(&mut self, shape: &'static Shape, ty: &Ty, depth: usize) -> Result<(), ShapeError> {
        match ty {
            Ty::Fixed(n) => self.take(shape, "a fixed-size field", *n as u64),
            Ty::Bool => self.take(shape, "a boolean", 1),
            Ty::String => {
                let length = i16::from_be_bytes(self.fixed::<2>(shape)?);
                self.length(shape, "string", length as i64)
            }
            Ty::Bytes => {
                let length = i32::from_be_bytes(self.fixed::<4>(shape)?);
                self.length(shape, "bytes", length as i64)
            }
            Ty::CompactString | Ty::CompactBytes => {
                let n = self.uvarint(shape)?;
                // 0 is null; n - 1 bytes follow otherwise.
                self.take(
                    shape,
                    "a compact string or bytes",
                    n.saturating_sub(1) as u64,
                )
            }
            Ty::Array {
                compact,
                element,
                element_bytes,
            } => {
                let count = if *compact {
                    (self.uvarint(shape)? as u64).saturating_sub(1)
                } else {
                    let n = i32::from_be_bytes(self.fixed::<4>(shape)?);
                    if n < -1 {
                        return Err(ShapeError::Negative {
                            shape: shape.name,
                            what: "array",
                            length: n as i64,
                        });
                    }
                    n.max(0) as u64
                };
                // Every element takes at least one byte.
                if count > self.rest.len() as u64 {
                    return Err(ShapeError::Overrun {
                        shape: shape.name,
                        what: "an array",
                        claimed: count,
                        left: self.rest.len(),
                    });
                }
                self.decoded_bytes += count as usize * element_bytes;
                for _ in 0..count {
                    self.value(shape, element, depth)?;
                }
                Ok(())
            }
            Ty::Struct(nested) => self.structure(nested, depth + 1),
            Ty::OptionStruct(nested) => {
                let [present] = self.fixed::<1>(shape)?;
                if (present as i8) < 0 {
                    return Ok(());
                }
                self.structure(nested, depth + 1)
            }
        }
    }

    fn length(
        &mut self,
        shape: &'static Shape,
        what: &'static str,
        n: i64,
    ) -> Result<(), ShapeError> {
        match n {
            -1 => Ok(()),
            n if n < -1 => Err(ShapeError::Negative {
                shape: shape.name,
                what,
                length: n,
            }),
            n => self.take(shape, what, n as u64),
        }
    }
}

#[cfg(test)]
mod tests;

/// Decodes a request of any API the way the broker does — a Kafka request is walked against its
/// shape first, then decoded by the generated codec and encoded again; Shoal's own messages
/// decode with every length checked — and throws the result away. The fuzzers' entry point.
pub fn check_and_decode(api_key: i16, version: i16, body: &[u8]) -> Result<(), String> {
    use bytes::Bytes;
    use kafka_protocol::protocol::{Decodable, Request};

    fn decode<R: Decodable>(body: &[u8], version: i16) -> Result<(), String> {
        R::decode(&mut Bytes::copy_from_slice(body), version)
            .map(drop)
            .map_err(|e| e.to_string())
    }
    if let Some(shape) = request_shape(api_key) {
        check(shape, version, body).map_err(|e| e.to_string())?;
    }
    if let Ok(key) = crate::messages::ApiKey::try_from(api_key) {
        return crate::messages::reencode(key, false, version, &mut Bytes::copy_from_slice(body))
            .map(drop)
            .map_err(|e| e.to_string());
    }
    macro_rules! by_key {
        ($($request:ty),* $(,)?) => {
            $(
                if api_key == <$request>::KEY {
                    return decode::<$request>(body, version);
                }
            )*
        };
    }
    by_key!(
        crate::diskless::DisklessCreatePartitionsRequest,
        crate::diskless::DisklessDeleteTopicsRequest,
        crate::diskless::DisklessCommitFileRequest,
        crate::diskless::DisklessDeleteRecordsRequest,
        crate::diskless::DisklessListOffsetsRequest,
        crate::diskless::DisklessFindBatchesRequest,
        crate::diskless::DisklessDescribeFilesRequest,
        crate::mirror::CreateMirrorRequest,
        crate::mirror::AddTopicsToMirrorRequest,
        crate::mirror::RemoveTopicsFromMirrorRequest,
        crate::mirror::LastMirroredOffsetsRequest,
        crate::mirror::ListMirrorsRequest,
        crate::mirror::DescribeMirrorsRequest,
        crate::mirror::ReadMirrorStatesRequest,
        crate::mirror::WriteMirrorStatesRequest,
        crate::mirror::PauseMirrorTopicsRequest,
        crate::mirror::ResumeMirrorTopicsRequest,
    );
    Err(format!("API {api_key} is not served"))
}
