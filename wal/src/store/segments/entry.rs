//! The layout of one object in a segment file: a header naming the object, then its bytes,
//! padded so that the next entry starts on an alignment boundary (O_DIRECT writes whole
//! aligned blocks).
//!
//! ```text
//! magic "SHSG" | version u16 | key length u16 | data length u64 | written at (unix ms) u64 |
//! header CRC-32C u32 (of the 24 bytes before it and the key) | key | data | zero padding
//! ```
//! All integers little-endian. A segment is read from its start until the first block that
//! does not hold a valid header: the writer acknowledges an entry only once every entry before
//! it is on disk, so nothing acknowledged lies past that point.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Offsets and lengths of segment writes are multiples of this (the largest logical block
/// size in common use; glommio's DMA files need at least the device's).
pub const ALIGNMENT: u64 = 4096;

const MAGIC: &[u8; 4] = b"SHSG";
const VERSION: u16 = 1;
/// Bytes before the key.
pub const FIXED_HEADER_BYTES: usize = 28;
/// Keys are short names ("wal/<uuid>", "wal/rw-..."); the bound keeps a header in one block.
pub const MAX_KEY_BYTES: usize = 1024;

/// What a header says about its entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryHeader {
    pub key: String,
    pub data_len: u64,
    pub written_at: SystemTime,
}

impl EntryHeader {
    /// Bytes from the entry's start to its data.
    pub fn data_offset(&self) -> u64 {
        (FIXED_HEADER_BYTES + self.key.len()) as u64
    }

    /// Bytes the entry occupies in its segment, padding included.
    pub fn entry_len(&self) -> u64 {
        entry_len(self.key.len(), self.data_len)
    }

    /// Writes the header and key into the start of `out`.
    pub fn encode(&self, out: &mut [u8]) {
        let key = self.key.as_bytes();
        let millis = self
            .written_at
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis() as u64;
        out[0..4].copy_from_slice(MAGIC);
        out[4..6].copy_from_slice(&VERSION.to_le_bytes());
        out[6..8].copy_from_slice(&(key.len() as u16).to_le_bytes());
        out[8..16].copy_from_slice(&self.data_len.to_le_bytes());
        out[16..24].copy_from_slice(&millis.to_le_bytes());
        out[FIXED_HEADER_BYTES..FIXED_HEADER_BYTES + key.len()].copy_from_slice(key);
        let crc = header_crc(&out[..24], key);
        out[24..28].copy_from_slice(&crc.to_le_bytes());
    }

    /// The header at the start of `block`, or None where there is none (zeros past the
    /// segment's last entry, a torn write, anything else).
    pub fn decode(block: &[u8]) -> Option<EntryHeader> {
        if block.len() < FIXED_HEADER_BYTES || &block[0..4] != MAGIC {
            return None;
        }
        let version = u16::from_le_bytes(block[4..6].try_into().ok()?);
        let key_len = u16::from_le_bytes(block[6..8].try_into().ok()?) as usize;
        if version != VERSION
            || key_len > MAX_KEY_BYTES
            || block.len() < FIXED_HEADER_BYTES + key_len
        {
            return None;
        }
        let key = &block[FIXED_HEADER_BYTES..FIXED_HEADER_BYTES + key_len];
        let stored = u32::from_le_bytes(block[24..28].try_into().ok()?);
        if stored != header_crc(&block[..24], key) {
            return None;
        }
        let data_len = u64::from_le_bytes(block[8..16].try_into().ok()?);
        let millis = u64::from_le_bytes(block[16..24].try_into().ok()?);
        Some(EntryHeader {
            key: std::str::from_utf8(key).ok()?.to_string(),
            data_len,
            written_at: UNIX_EPOCH + Duration::from_millis(millis),
        })
    }
}

/// Bytes an entry of this key and data occupies, padding included.
pub fn entry_len(key_len: usize, data_len: u64) -> u64 {
    align_up(FIXED_HEADER_BYTES as u64 + key_len as u64 + data_len)
}

pub fn align_up(n: u64) -> u64 {
    n.div_ceil(ALIGNMENT) * ALIGNMENT
}

fn header_crc(fixed: &[u8], key: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(fixed), key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> EntryHeader {
        EntryHeader {
            key: "wal/0123".to_string(),
            data_len: 5000,
            written_at: UNIX_EPOCH + Duration::from_millis(1_700_000_000_123),
        }
    }

    #[test]
    fn a_header_reads_back_and_its_entry_is_padded_to_blocks() {
        let mut block = vec![0u8; ALIGNMENT as usize];
        header().encode(&mut block);
        assert_eq!(EntryHeader::decode(&block), Some(header()));
        assert_eq!(header().data_offset(), 36);
        assert_eq!(header().entry_len(), 8192);
        assert_eq!(entry_len(8, 4096 - 36), 4096);
    }

    #[test]
    fn zeros_a_flipped_bit_or_a_cut_block_are_no_header() {
        let mut block = vec![0u8; ALIGNMENT as usize];
        assert_eq!(EntryHeader::decode(&block), None);
        header().encode(&mut block);
        for byte in [0, 5, 9, 17, 25, 30] {
            let mut damaged = block.clone();
            damaged[byte] ^= 0x10;
            assert_eq!(EntryHeader::decode(&damaged), None, "byte {byte}");
        }
        assert_eq!(EntryHeader::decode(&block[..30]), None);
    }
}
