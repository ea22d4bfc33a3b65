//! Bytes read from a store for use on the reading executor. A read of the local store is
//! kept in the buffer the kernel read it into (a direct read's aligned buffer, owned by this
//! executor), so the fetch path copies it once, into its answer, instead of first copying it
//! out into a buffer of its own. Such bytes cannot go to another thread: whatever must, is
//! copied (`to_bytes`).

use std::ops::Deref;

use bytes::Bytes;
use glommio::io::ReadResult;

use crate::WalError;

#[derive(Clone, Debug)]
pub enum ReadBytes {
    /// The read's own buffer.
    Direct(ReadResult),
    /// Bytes from elsewhere (an S3 answer).
    Shared(Bytes),
}

impl ReadBytes {
    /// `len` bytes from `start`, sharing this read; None past its end.
    pub fn slice(&self, start: usize, len: usize) -> Option<ReadBytes> {
        let end = start.checked_add(len).filter(|&end| end <= self.len())?;
        match self {
            // glommio's slice of an empty range is None; an empty read needs no buffer.
            ReadBytes::Direct(_) if len == 0 => Some(ReadBytes::Shared(Bytes::new())),
            ReadBytes::Direct(read) => ReadResult::slice(read, start, len).map(ReadBytes::Direct),
            ReadBytes::Shared(bytes) => Some(ReadBytes::Shared(bytes.slice(start..end))),
        }
    }

    /// The bytes in a buffer that may go anywhere: shared, or copied out of a direct read.
    pub fn to_bytes(&self) -> Bytes {
        match self {
            ReadBytes::Direct(read) => Bytes::copy_from_slice(read),
            ReadBytes::Shared(bytes) => bytes.clone(),
        }
    }
}

impl Deref for ReadBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            ReadBytes::Direct(read) => read,
            ReadBytes::Shared(bytes) => bytes,
        }
    }
}

impl From<Bytes> for ReadBytes {
    fn from(bytes: Bytes) -> ReadBytes {
        ReadBytes::Shared(bytes)
    }
}

/// A read of `len` bytes at `offset` of `key`, refused when the object ended before.
pub(super) fn exact_range(
    key: &str,
    offset: u64,
    len: usize,
    data: ReadResult,
) -> Result<ReadBytes, WalError> {
    if data.len() != len {
        return Err(short_object(key, offset, len));
    }
    Ok(ReadBytes::Direct(data))
}

pub(super) fn short_object(key: &str, offset: u64, len: usize) -> WalError {
    WalError::ShortObject {
        key: key.to_string(),
        offset,
        len,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_stay_within_the_read() {
        let read = ReadBytes::from(Bytes::from_static(b"abcdef"));
        assert_eq!(&*read.slice(2, 3).unwrap(), b"cde");
        assert_eq!(&*read.slice(6, 0).unwrap(), b"");
        assert!(read.slice(4, 3).is_none());
        assert!(read.slice(usize::MAX, 2).is_none());
        assert_eq!(read.to_bytes(), Bytes::from_static(b"abcdef"));
    }
}
