//! Compaction's key map: each key's latest offset in the dirty range, keyed by a 128-bit hash
//! of the key (as Kafka's cleaner keys its offset map by an MD5 digest), bounded by a byte
//! budget so a dirty range with more keys takes several passes, never more memory.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

/// What one entry costs at most: a 16-byte hash and an 8-byte offset padded to 32 bytes,
/// hashbrown's control byte, and its 7/8 load factor, rounded up.
pub const ENTRY_BYTES: usize = 40;

pub struct KeyMap {
    latest: HashMap<u128, i64>,
    max_entries: usize,
}

impl KeyMap {
    /// A map that stays within `budget_bytes` (at least one entry).
    pub fn with_budget(budget_bytes: usize) -> KeyMap {
        KeyMap {
            latest: HashMap::new(),
            max_entries: (budget_bytes / ENTRY_BYTES).max(1),
        }
    }

    /// Whether `more` keys not yet in the map would still fit.
    pub fn has_room_for(&self, more: usize) -> bool {
        self.latest.len().saturating_add(more) <= self.max_entries
    }

    pub fn is_empty(&self) -> bool {
        self.latest.is_empty()
    }

    pub fn len(&self) -> usize {
        self.latest.len()
    }

    /// Records `offset` as `key`'s latest (offsets arrive in order).
    pub fn insert(&mut self, key: &[u8], offset: i64) {
        self.latest.insert(digest(key), offset);
    }

    /// The latest offset of `key` in the dirty range, if it appears there.
    pub fn latest(&self, key: &[u8]) -> Option<i64> {
        self.latest.get(&digest(key)).copied()
    }
}

/// Two SipHash-1-3 digests of the key, under different prefixes: 128 bits, so two keys of
/// one partition share a digest (and the older would be dropped) with negligible chance.
fn digest(key: &[u8]) -> u128 {
    let half = |salt: u8| {
        let mut hasher = DefaultHasher::new();
        salt.hash(&mut hasher);
        key.hash(&mut hasher);
        hasher.finish()
    };
    ((half(0x5a) as u128) << 64) | half(0xa5) as u128
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_offset_wins_and_the_budget_bounds_the_keys() {
        let mut map = KeyMap::with_budget(3 * ENTRY_BYTES);
        map.insert(b"a", 1);
        map.insert(b"b", 2);
        map.insert(b"a", 5);
        assert_eq!(map.latest(b"a"), Some(5));
        assert_eq!(map.latest(b"c"), None);
        assert!(map.has_room_for(1));
        assert!(!map.has_room_for(2));
        assert_eq!(map.len(), 2);
    }
}
