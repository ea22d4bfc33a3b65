//! ObjectFormat 1 (WRITE_AHEAD_MULTI_SEGMENT): raw v2 batches concatenated, grouped by
//! partition. All metadata lives in the coordinator, so the object itself has no header.

use bytes::{Bytes, BytesMut};

use crate::{BatchHeader, WalError};

/// Where one appended segment landed inside the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentPlacement {
    pub byte_offset: u32,
    pub size_bytes: u32,
}

/// Collects segments in the order given; callers append partition by partition so each
/// partition's bytes are contiguous.
#[derive(Default)]
pub struct ObjectBuilder {
    buf: BytesMut,
}

/// Byte offsets in the coordinator are int32, so an object must stay under 2 GiB.
pub const OBJECT_MAX_BYTES: usize = i32::MAX as usize;

impl ObjectBuilder {
    pub fn with_capacity(size_bytes: usize) -> Self {
        ObjectBuilder {
            buf: BytesMut::with_capacity(size_bytes),
        }
    }

    /// A builder writing into `buf` (emptied first), a finished object's buffer taken back:
    /// its pages are already mapped, so a large object built again does not fault them in.
    pub fn reusing(mut buf: BytesMut) -> Self {
        buf.clear();
        ObjectBuilder { buf }
    }

    pub fn append(&mut self, segment: &[u8]) -> Result<SegmentPlacement, WalError> {
        let byte_offset = self.buf.len();
        if byte_offset + segment.len() > OBJECT_MAX_BYTES {
            return Err(WalError::ObjectTooLarge(byte_offset + segment.len()));
        }
        self.buf.extend_from_slice(segment);
        Ok(SegmentPlacement {
            byte_offset: byte_offset as u32,
            size_bytes: segment.len() as u32,
        })
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub fn finish(self) -> Bytes {
        self.buf.freeze()
    }
}

/// Reads back batches of `sizes` bytes each, stored back to back at the start of `range`:
/// each must be a whole v2 batch of exactly its size, and, when `verify_crc` (bytes that
/// come from the store rather than from memory already checked), match its CRC.
pub fn read_batches(
    range: &[u8],
    sizes: impl IntoIterator<Item = usize>,
    verify_crc: bool,
) -> Result<Vec<BatchHeader>, WalError> {
    let mut headers = Vec::new();
    let mut pos = 0usize;
    for size in sizes {
        let Some(batch) = range.get(pos..pos.saturating_add(size)) else {
            return Err(WalError::BatchLengthMismatch {
                declared: size,
                available: range.len().saturating_sub(pos),
            });
        };
        let header = if verify_crc {
            BatchHeader::parse_validated(batch)?
        } else {
            BatchHeader::parse(batch)?
        };
        if header.size_bytes != size {
            return Err(WalError::BatchLengthMismatch {
                declared: header.size_bytes,
                available: size,
            });
        }
        headers.push(header);
        pos += size;
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finished_objects_buffer_builds_the_next_from_offset_zero() {
        let mut builder = ObjectBuilder::with_capacity(1 << 20);
        builder.append(b"first object").unwrap();
        let first = builder.finish();
        let buf = first.try_into_mut().expect("nothing else holds it");
        let capacity = buf.capacity();
        let mut again = ObjectBuilder::reusing(buf);
        assert!(again.is_empty());
        assert_eq!(again.append(b"next").unwrap().byte_offset, 0);
        assert_eq!(&again.finish()[..], b"next");
        assert!(capacity >= 1 << 20, "the buffer kept its pages");
    }

    #[test]
    fn placements_cover_the_object_without_gaps() {
        let mut builder = ObjectBuilder::with_capacity(16);
        let a = builder.append(b"aaaa").unwrap();
        let b = builder.append(b"bb").unwrap();
        assert_eq!(
            a,
            SegmentPlacement {
                byte_offset: 0,
                size_bytes: 4
            }
        );
        assert_eq!(b.byte_offset, 4);
        let object = builder.finish();
        assert_eq!(&object[..], b"aaaabb");
    }
}
