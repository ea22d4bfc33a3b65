//! ObjectFormat 1 (WRITE_AHEAD_MULTI_SEGMENT): raw v2 batches concatenated, grouped by
//! partition. All metadata lives in the coordinator, so the object itself has no header.

use bytes::{Bytes, BytesMut};

use crate::WalError;

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

#[cfg(test)]
mod tests {
    use super::*;

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
