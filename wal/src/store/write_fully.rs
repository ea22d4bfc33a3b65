//! Writing every byte of an object or failing: a write that stops short (a full disk, a
//! quota) is continued from where it stopped when the file allows it, and otherwise fails
//! the put, so no acknowledged object can have a hole in it.

use std::io;

use glommio::io::BufferedFile;

use crate::WalError;

/// Bytes handed to one write: bounds the copy each write makes (io_uring owns its buffer).
const WRITE_CHUNK_BYTES: usize = 1 << 20;

/// A file written at positions: glommio's buffered file, or a fake in tests.
pub(super) trait PositionalWrite {
    /// Offsets and lengths of writes must be multiples of this (1 when any will do).
    fn alignment(&self) -> usize;
    /// Writes `data` at `pos` (padded with zeros to the alignment) and returns how many bytes
    /// the file took, which may be fewer than asked.
    async fn write_chunk(&self, data: &[u8], pos: u64) -> io::Result<usize>;
}

impl PositionalWrite for BufferedFile {
    fn alignment(&self) -> usize {
        1
    }

    async fn write_chunk(&self, data: &[u8], pos: u64) -> io::Result<usize> {
        Ok(self.write_at(data.to_vec(), pos).await?)
    }
}

/// Writes all of `data` from offset 0. A short write is continued where it stopped if that
/// point is aligned; a write that takes nothing, or stops unaligned, fails with what it did.
pub(super) async fn write_fully(
    file: &impl PositionalWrite,
    key: &str,
    data: &[u8],
) -> Result<(), WalError> {
    let align = file.alignment();
    let mut pos = 0;
    while pos < data.len() {
        let wanted = WRITE_CHUNK_BYTES.min(data.len() - pos);
        let written = file
            .write_chunk(&data[pos..pos + wanted], pos as u64)
            .await
            .map_err(|e| WalError::io(key, e))?;
        if written == 0 || (written < wanted && written % align != 0) {
            return Err(WalError::ShortWrite {
                key: key.to_string(),
                offset: pos as u64,
                wanted,
                written,
            });
        }
        // A DMA write reports the padding too; only the data counts.
        pos += written.min(wanted);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;

    /// Takes at most `per_write` bytes a write, up to `capacity` in all, like a filling disk.
    struct FillingDisk {
        align: usize,
        per_write: usize,
        capacity: usize,
        contents: RefCell<Vec<u8>>,
    }

    impl PositionalWrite for FillingDisk {
        fn alignment(&self) -> usize {
            self.align
        }

        async fn write_chunk(&self, data: &[u8], pos: u64) -> io::Result<usize> {
            let mut contents = self.contents.borrow_mut();
            assert_eq!(
                contents.len() as u64,
                pos,
                "writes continue where the last stopped"
            );
            let room = self.capacity.saturating_sub(contents.len());
            if room == 0 {
                return Err(io::Error::from_raw_os_error(28)); // ENOSPC
            }
            let padded = data.len().div_ceil(self.align) * self.align;
            let take = padded.min(self.per_write).min(room);
            let mut chunk = data.to_vec();
            chunk.resize(padded, 0);
            contents.extend_from_slice(&chunk[..take]);
            Ok(take)
        }
    }

    fn disk(align: usize, per_write: usize, capacity: usize) -> FillingDisk {
        FillingDisk {
            align,
            per_write,
            capacity,
            contents: RefCell::new(Vec::new()),
        }
    }

    fn run<T>(future: impl std::future::Future<Output = T>) -> T {
        futures_lite::future::block_on(future)
    }

    fn data(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i % 251) as u8).collect()
    }

    #[test]
    fn short_aligned_writes_are_continued_until_every_byte_is_written() {
        let file = disk(512, 4096, usize::MAX);
        let data = data(3 * WRITE_CHUNK_BYTES + 1000);
        run(write_fully(&file, "wal/a", &data)).unwrap();
        let contents = file.contents.into_inner();
        assert_eq!(&contents[..data.len()], &data[..]);
    }

    #[test]
    fn short_buffered_writes_are_continued() {
        let file = disk(1, 777, usize::MAX);
        let data = data(10_000);
        run(write_fully(&file, "wal/a", &data)).unwrap();
        assert_eq!(file.contents.into_inner(), data);
    }

    #[test]
    fn a_full_disk_fails_the_write_instead_of_leaving_a_hole() {
        let file = disk(1, usize::MAX, 5000);
        let error = run(write_fully(&file, "wal/full", &data(10_000))).unwrap_err();
        assert!(error.to_string().contains("wal/full"), "{error}");
    }

    #[test]
    fn a_write_that_stops_unaligned_fails() {
        let file = disk(512, 700, usize::MAX);
        let error = run(write_fully(&file, "wal/odd", &data(4096))).unwrap_err();
        assert!(
            matches!(error, WalError::ShortWrite { written: 700, .. }),
            "{error}"
        );
    }
}
