//! Writing every byte of an object or failing: a write that stops short (a full disk, a
//! quota) is continued from where it stopped, and one that takes nothing fails the put, so no
//! acknowledged object can have a hole in it.

use std::io;

use crate::WalError;

/// Writes all of `data` from offset 0 with `write_at(bytes, offset)`, which returns how many
/// bytes the file took (pwrite's contract: possibly fewer than asked).
pub(super) fn write_fully(
    key: &str,
    data: &[u8],
    mut write_at: impl FnMut(&[u8], u64) -> io::Result<usize>,
) -> Result<(), WalError> {
    let mut pos = 0;
    while pos < data.len() {
        let written = match write_at(&data[pos..], pos as u64) {
            Ok(written) => written,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(WalError::io(key, e)),
        };
        if written == 0 {
            return Err(WalError::ShortWrite {
                key: key.to_string(),
                offset: pos as u64,
                wanted: data.len() - pos,
                written,
            });
        }
        pos += written;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Takes at most `per_write` bytes a write, up to `capacity` in all, like a filling disk;
    /// `full_error` says whether the full disk answers ENOSPC or a write of nothing.
    struct FillingDisk {
        per_write: usize,
        capacity: usize,
        full_error: bool,
        contents: Vec<u8>,
        interrupted_once: bool,
    }

    impl FillingDisk {
        fn write_at(&mut self, data: &[u8], pos: u64) -> io::Result<usize> {
            assert_eq!(
                self.contents.len() as u64,
                pos,
                "writes continue where the last stopped"
            );
            if !self.interrupted_once {
                self.interrupted_once = true;
                return Err(io::Error::from(io::ErrorKind::Interrupted));
            }
            let room = self.capacity.saturating_sub(self.contents.len());
            if room == 0 && self.full_error {
                return Err(io::Error::from_raw_os_error(28)); // ENOSPC
            }
            let take = data.len().min(self.per_write).min(room);
            self.contents.extend_from_slice(&data[..take]);
            Ok(take)
        }
    }

    fn disk(per_write: usize, capacity: usize, full_error: bool) -> FillingDisk {
        FillingDisk {
            per_write,
            capacity,
            full_error,
            contents: Vec::new(),
            interrupted_once: false,
        }
    }

    fn data(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i % 251) as u8).collect()
    }

    #[test]
    fn short_and_interrupted_writes_are_continued_until_every_byte_is_written() {
        let mut file = disk(777, usize::MAX, true);
        let data = data(10_000);
        write_fully("wal/a", &data, |d, pos| file.write_at(d, pos)).unwrap();
        assert_eq!(file.contents, data);
    }

    #[test]
    fn a_full_disk_fails_the_write_instead_of_leaving_a_hole() {
        let mut file = disk(usize::MAX, 5000, true);
        let error =
            write_fully("wal/full", &data(10_000), |d, pos| file.write_at(d, pos)).unwrap_err();
        assert!(error.to_string().contains("wal/full"), "{error}");
    }

    #[test]
    fn a_write_that_takes_nothing_fails_naming_where_it_stopped() {
        let mut file = disk(usize::MAX, 5000, false);
        let error =
            write_fully("wal/odd", &data(8000), |d, pos| file.write_at(d, pos)).unwrap_err();
        assert!(
            matches!(
                error,
                WalError::ShortWrite {
                    offset: 5000,
                    wanted: 3000,
                    ..
                }
            ),
            "{error}"
        );
    }
}
