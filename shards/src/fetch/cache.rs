//! A byte-bounded cache of recently committed objects, evicted oldest first: tailing
//! consumers read what was just written without touching storage. Objects are kept as the
//! pieces they were produced in (`ObjectBody`), so a cached batch is the request's own bytes.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use shoal_wal::ObjectBody;

pub struct ObjectCache {
    objects: HashMap<Arc<str>, ObjectBody>,
    order: VecDeque<Arc<str>>,
    size_bytes: usize,
    max_bytes: usize,
    hits: u64,
    misses: u64,
}

impl ObjectCache {
    pub fn new(max_bytes: usize) -> ObjectCache {
        ObjectCache {
            objects: HashMap::new(),
            order: VecDeque::new(),
            size_bytes: 0,
            max_bytes,
            hits: 0,
            misses: 0,
        }
    }

    pub fn insert(&mut self, key: &str, data: ObjectBody) {
        if data.len() > self.max_bytes || self.objects.contains_key(key) {
            return;
        }
        while self.size_bytes + data.len() > self.max_bytes {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            if let Some(evicted) = self.objects.remove(&oldest) {
                self.size_bytes -= evicted.len();
            }
        }
        let key: Arc<str> = Arc::from(key);
        self.size_bytes += data.len();
        self.order.push_back(key.clone());
        self.objects.insert(key, data);
    }

    /// Whether the object is here (counted neither as a hit nor a miss).
    pub fn contains(&self, key: &str) -> bool {
        self.objects.contains_key(key)
    }

    /// The byte range of a cached object, without copying.
    pub fn get_range(&mut self, key: &str, offset: usize, len: usize) -> Option<ObjectBody> {
        let range = self
            .objects
            .get(key)
            .and_then(|data| data.range(offset, len));
        match range {
            Some(_) => self.hits += 1,
            None => self.misses += 1,
        }
        range
    }

    pub fn hit_ratio(&self) -> f64 {
        let total = self.hits + self.misses;
        if total == 0 {
            0.0
        } else {
            self.hits as f64 / total as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_oldest_first_and_stays_within_its_bound() {
        let mut cache = ObjectCache::new(10);
        cache.insert("a", b"aaaa".to_vec().into());
        cache.insert("b", b"bbbb".to_vec().into());
        cache.insert("c", b"cccc".to_vec().into());
        assert!(cache.get_range("a", 0, 1).is_none());
        assert_eq!(
            &cache.get_range("c", 1, 2).unwrap().to_contiguous()[..],
            b"cc"
        );
        assert!(cache.get_range("b", 3, 2).is_none(), "range past the end");
        cache.insert("huge", vec![0; 11].into());
        assert!(cache.get_range("huge", 0, 1).is_none());
        assert!(cache.size_bytes <= 10);
    }
}
