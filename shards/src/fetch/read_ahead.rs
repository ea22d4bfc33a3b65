//! Fetches answered before they are asked. A consumer catching up asks for one fetch at a
//! time: without this, each fetch's store reads (a disk read, or a GET on S3) and the work of
//! checking and laying out its batches wait until the consumer has taken the answer before,
//! so the broker and the client take turns. After a fetch that had to read the store, its
//! shard looks up the batches that come next and reads them into ranges here, then lays out
//! each partition's records (checked, offsets patched) as soon as they are read: the
//! consumer's next fetch takes those records (or waits for their layout) when it finds the
//! very batches they are made of, and otherwise uses the ranges, read or being read.
//!
//! Bounded: at most `max_bytes` of ranges (those being read included) and prepared records
//! together, the oldest dropped first; at most `MAX_READS` read-aheads at once per shard.
//! Everything here is advisory: a fetch that finds nothing reads the store itself, and one
//! whose read-ahead failed reads again for its own error.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;
use std::sync::Arc;

use bytes::Bytes;
use futures::future::{LocalBoxFuture, Shared};
use shoal_coordinator::{BatchCoordinate, TopicPartition};
use shoal_wal::ReadBytes;

/// A read of a range that may still be running; None if it failed.
pub type PendingRead = Shared<LocalBoxFuture<'static, Option<ReadBytes>>>;

/// Read-aheads one shard runs at once.
const MAX_READS: usize = 4;

/// What a range holds: bytes not yet checked (they came from the store), or a read of them.
#[derive(Clone)]
pub enum Ahead {
    Read(ReadBytes),
    Reading(PendingRead),
}

struct Range {
    offset: usize,
    len: usize,
    ahead: Ahead,
}

/// The records of every partition of one fetch read ahead, laid out once read (None for a
/// partition whose batches could not be served, or whose records were taken).
pub type Layout = Shared<LocalBoxFuture<'static, Rc<RefCell<Vec<Option<Bytes>>>>>>;

/// A partition's records being laid out ahead from exactly these batches: the layout of its
/// fetch, and the partition's place in it.
struct Prepared {
    batches: Vec<BatchCoordinate>,
    layout: Layout,
    index: usize,
    size_bytes: usize,
}

/// An entry, in the order they were made, for dropping the oldest.
#[derive(PartialEq, Eq)]
enum Made {
    Range(Arc<str>, usize),
    Prepared(TopicPartition, i64),
}

#[derive(Default)]
struct Ranges {
    by_object: HashMap<Arc<str>, Vec<Range>>,
    /// By partition and the offset of its first batch.
    prepared: HashMap<(TopicPartition, i64), Prepared>,
    order: VecDeque<Made>,
    size_bytes: usize,
}

pub struct ReadAhead {
    max_bytes: usize,
    ranges: RefCell<Ranges>,
    reads: Cell<usize>,
    /// Bytes of the fetches being read and laid out ahead (`reserve`): their ranges and
    /// records may be dropped from `ranges` before they are done.
    reserved_bytes: Cell<usize>,
}

impl ReadAhead {
    /// `max_bytes` 0 turns reading ahead off.
    pub fn new(max_bytes: usize) -> ReadAhead {
        ReadAhead {
            max_bytes,
            ranges: RefCell::new(Ranges::default()),
            reads: Cell::new(0),
            reserved_bytes: Cell::new(0),
        }
    }

    /// Takes one of the shard's read-ahead turns, if one is free and reading ahead is on;
    /// the turn is given back when the returned guard is dropped.
    pub fn start(&self) -> Option<ReadTurn<'_>> {
        if self.max_bytes == 0 || self.reads.get() >= MAX_READS {
            return None;
        }
        self.reads.set(self.reads.get() + 1);
        Some(ReadTurn { owner: self })
    }

    /// Room for reading and laying out a fetch's `bytes` ahead (twice them: the ranges read
    /// and the records laid out), if the bound has it; given back when the reservation is
    /// dropped. With what the entries hold, a shard's read-ahead stays within twice
    /// `max_bytes`.
    pub fn reserve(self: &Rc<Self>, bytes: usize) -> Option<Reservation> {
        let bytes = bytes.saturating_mul(2);
        if self.reserved_bytes.get() + bytes > self.max_bytes {
            return None;
        }
        self.reserved_bytes.set(self.reserved_bytes.get() + bytes);
        Some(Reservation {
            owner: self.clone(),
            bytes,
        })
    }

    /// `len` bytes at `offset` of `key`, when a range read ahead holds them: the bytes, or the
    /// read that will bring them and where that read starts.
    pub fn find(&self, key: &str, offset: usize, len: usize) -> Option<(Ahead, usize)> {
        let ranges = self.ranges.borrow();
        let range = ranges
            .by_object
            .get(key)?
            .iter()
            .find(|r| r.offset <= offset && offset + len <= r.offset + r.len)?;
        let ahead = match &range.ahead {
            // Within the range (checked above), so the slice is there.
            Ahead::Read(bytes) => Ahead::Read(bytes.slice(offset - range.offset, len)?),
            reading => reading.clone(),
        };
        Some((ahead, range.offset))
    }

    /// Records a read of `len` bytes at `offset` of `key`, dropping the oldest ranges to stay
    /// within bounds. False (nothing recorded) when the range alone is over the bound.
    pub fn insert(&self, key: &Arc<str>, offset: usize, len: usize, read: PendingRead) -> bool {
        if len > self.max_bytes {
            return false;
        }
        let mut ranges = self.ranges.borrow_mut();
        ranges.make_room(len, self.max_bytes);
        ranges.size_bytes += len;
        ranges.order.push_back(Made::Range(key.clone(), offset));
        ranges
            .by_object
            .entry(key.clone())
            .or_default()
            .push(Range {
                offset,
                len,
                ahead: Ahead::Reading(read),
            });
        true
    }

    /// The read of the range at `offset` of `key` ended: its bytes are kept, or the range is
    /// dropped if the read failed (a fetch then reads the store itself).
    pub fn finished(&self, key: &str, offset: usize, read: Option<ReadBytes>) {
        let mut ranges = self.ranges.borrow_mut();
        match read {
            Some(bytes) => {
                let range = ranges
                    .by_object
                    .get_mut(key)
                    .and_then(|object| object.iter_mut().find(|r| r.offset == offset));
                // (A range dropped meanwhile and made again may be another read's.)
                if let Some(range) = range.filter(|r| r.len == bytes.len()) {
                    range.ahead = Ahead::Read(bytes);
                }
            }
            None => {
                ranges.remove(key, offset);
                ranges
                    .order
                    .retain(|m| !matches!(m, Made::Range(k, at) if &**k == key && *at == offset));
            }
        }
    }

    /// Records that `layout` (at `index`) lays out `partition`'s records from `batches`, for
    /// the fetch that will find the same batches.
    pub fn promise(
        &self,
        partition: TopicPartition,
        batches: Vec<BatchCoordinate>,
        layout: Layout,
        index: usize,
    ) {
        let size_bytes = batches.iter().map(|b| b.size_bytes as usize).sum();
        let (Some(first), true) = (batches.first(), size_bytes <= self.max_bytes) else {
            return;
        };
        let key = (partition, first.base_offset);
        let mut ranges = self.ranges.borrow_mut();
        ranges.make_room(size_bytes, self.max_bytes);
        ranges.size_bytes += size_bytes;
        ranges.order.push_back(Made::Prepared(key.0, key.1));
        let prepared = Prepared {
            batches,
            layout,
            index,
            size_bytes,
        };
        if let Some(old) = ranges.prepared.insert(key, prepared) {
            ranges.size_bytes -= old.size_bytes;
        }
    }

    /// Whether records of `partition` are laid out, or being laid out, from exactly `batches`.
    pub fn promised(&self, partition: TopicPartition, batches: &[BatchCoordinate]) -> bool {
        let Some(first) = batches.first() else {
            return false;
        };
        let ranges = self.ranges.borrow();
        ranges
            .prepared
            .get(&(partition, first.base_offset))
            .is_some_and(|p| p.batches == batches)
    }

    /// The records laid out (or being laid out) for `partition` from exactly `batches`,
    /// taken: a fetch uses them once. None if there are none, or they were made from other
    /// batches; the future's None if the layout could not serve them.
    pub fn take_prepared(
        &self,
        partition: TopicPartition,
        batches: &[BatchCoordinate],
    ) -> Option<impl std::future::Future<Output = Option<Bytes>>> {
        let key = (partition, batches.first()?.base_offset);
        let mut ranges = self.ranges.borrow_mut();
        if ranges.prepared.get(&key)?.batches != batches {
            return None;
        }
        let prepared = ranges.prepared.remove(&key)?;
        ranges.size_bytes -= prepared.size_bytes;
        // Taken out of the layout, so that it holds no bytes the bound no longer counts.
        Some(async move {
            let laid_out = prepared.layout.await;
            let taken = laid_out.borrow_mut().get_mut(prepared.index)?.take();
            taken
        })
    }

    /// Bytes held or being read.
    #[cfg(test)]
    fn size_bytes(&self) -> usize {
        self.ranges.borrow().size_bytes
    }
}

impl Ranges {
    /// Drops the oldest entries until `len` more bytes fit within `max_bytes`.
    fn make_room(&mut self, len: usize, max_bytes: usize) {
        while self.size_bytes + len > max_bytes {
            match self.order.pop_front() {
                Some(Made::Range(key, at)) => self.remove(&key, at),
                Some(Made::Prepared(partition, at)) => {
                    if let Some(old) = self.prepared.remove(&(partition, at)) {
                        self.size_bytes -= old.size_bytes;
                    }
                }
                None => break,
            }
        }
    }

    fn remove(&mut self, key: &str, offset: usize) {
        let Some(object) = self.by_object.get_mut(key) else {
            return;
        };
        if let Some(i) = object.iter().position(|r| r.offset == offset) {
            self.size_bytes -= object.swap_remove(i).len;
        }
        if object.is_empty() {
            self.by_object.remove(key);
        }
    }
}

/// One of the shard's read-ahead turns, held while a read-ahead runs.
pub struct ReadTurn<'a> {
    owner: &'a ReadAhead,
}

impl Drop for ReadTurn<'_> {
    fn drop(&mut self) {
        self.owner.reads.set(self.owner.reads.get() - 1);
    }
}

/// Room reserved for one fetch read ahead.
pub struct Reservation {
    owner: Rc<ReadAhead>,
    bytes: usize,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let left = self.owner.reserved_bytes.get() - self.bytes;
        self.owner.reserved_bytes.set(left);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;

    fn done(bytes: &'static [u8]) -> PendingRead {
        async move { Some(Bytes::from_static(bytes).into()) }
            .boxed_local()
            .shared()
    }

    #[test]
    fn a_range_serves_what_lies_inside_it_once_read() {
        let ahead = ReadAhead::new(100);
        let key: Arc<str> = Arc::from("wal/a");
        assert!(ahead.insert(&key, 10, 6, done(b"abcdef")));
        assert!(matches!(
            ahead.find("wal/a", 11, 3),
            Some((Ahead::Reading(_), 10))
        ));
        ahead.finished("wal/a", 10, Some(Bytes::from_static(b"abcdef").into()));
        match ahead.find("wal/a", 11, 3) {
            Some((Ahead::Read(bytes), 10)) => assert_eq!(&bytes[..], b"bcd"),
            _ => panic!("the range was read"),
        }
        // Outside the range, or another object: nothing.
        assert!(ahead.find("wal/a", 14, 3).is_none());
        assert!(ahead.find("wal/a", 9, 2).is_none());
        assert!(ahead.find("wal/b", 11, 3).is_none());
    }

    #[test]
    fn the_oldest_ranges_go_first_and_the_bound_holds() {
        let ahead = ReadAhead::new(10);
        let a: Arc<str> = Arc::from("a");
        let b: Arc<str> = Arc::from("b");
        assert!(ahead.insert(&a, 0, 6, done(b"aaaaaa")));
        assert!(ahead.insert(&b, 0, 4, done(b"bbbb")));
        assert_eq!(ahead.size_bytes(), 10);
        assert!(ahead.insert(&b, 4, 3, done(b"ccc")));
        assert!(ahead.find("a", 0, 1).is_none());
        assert!(ahead.find("b", 5, 1).is_some());
        assert_eq!(ahead.size_bytes(), 7);
        // Larger than the whole bound: not kept, nothing dropped for it.
        assert!(!ahead.insert(&a, 0, 11, done(b"")));
        assert_eq!(ahead.size_bytes(), 7);
    }

    #[test]
    fn a_failed_read_leaves_no_range() {
        let ahead = ReadAhead::new(10);
        let a: Arc<str> = Arc::from("a");
        assert!(ahead.insert(&a, 0, 6, done(b"aaaaaa")));
        ahead.finished("a", 0, None);
        assert!(ahead.find("a", 0, 1).is_none());
        assert_eq!(ahead.size_bytes(), 0);
    }

    fn batch(key: &str, base_offset: i64) -> BatchCoordinate {
        BatchCoordinate {
            object_key: Arc::from(key),
            byte_offset: 0,
            size_bytes: 3,
            base_offset,
            last_offset: base_offset,
            max_timestamp: 0,
            log_append_time_ms: 0,
        }
    }

    fn laid_out(records: &'static [u8]) -> Layout {
        async move { Rc::new(RefCell::new(vec![None, Some(Bytes::from_static(records))])) }
            .boxed_local()
            .shared()
    }

    #[test]
    fn prepared_records_serve_only_the_same_batches_and_once() {
        let ahead = ReadAhead::new(10);
        let tp = TopicPartition {
            topic_id: Default::default(),
            partition: 0,
        };
        let batches = vec![batch("a", 5), batch("a", 6)];
        assert!(!ahead.promised(tp, &batches));
        ahead.promise(tp, batches.clone(), laid_out(b"abcdef"), 1);
        assert!(ahead.promised(tp, &batches));
        assert!(!ahead.promised(tp, &batches[..1]));
        assert_eq!(ahead.size_bytes(), 6, "counted by its batches' sizes");
        // More batches found than were prepared from (new data), or others: not these.
        assert!(ahead.take_prepared(tp, &[batch("a", 5)]).is_none());
        assert!(ahead
            .take_prepared(tp, &[batch("b", 5), batch("a", 6)])
            .is_none());
        let taken = ahead.take_prepared(tp, &batches).unwrap();
        let records = futures_lite::future::block_on(taken).unwrap();
        assert_eq!(&records[..], b"abcdef");
        assert!(ahead.take_prepared(tp, &batches).is_none());
        assert_eq!(ahead.size_bytes(), 0);
        // A partition the layout could not serve: nothing.
        ahead.promise(tp, batches.clone(), laid_out(b"abcdef"), 0);
        let taken = ahead.take_prepared(tp, &batches).unwrap();
        assert!(futures_lite::future::block_on(taken).is_none());
        // Prepared records and ranges share the bound, the oldest dropped first.
        ahead.promise(tp, batches.clone(), laid_out(b"abcdef"), 1);
        assert!(ahead.insert(&Arc::from("b"), 0, 6, done(b"bbbbbb")));
        assert!(ahead.take_prepared(tp, &batches).is_none());
        assert_eq!(ahead.size_bytes(), 6);
    }

    #[test]
    fn reservations_hold_twice_the_bytes_within_the_bound() {
        let ahead = Rc::new(ReadAhead::new(100));
        let first = ahead.reserve(30).unwrap();
        assert!(ahead.reserve(30).is_none(), "60 + 60 > 100");
        let second = ahead.reserve(20).unwrap();
        drop(first);
        assert!(ahead.reserve(30).is_some());
        drop(second);
        assert!(ahead.reserve(50).is_some());
        assert!(ahead.reserve(51).is_none());
    }

    #[test]
    fn turns_are_bounded_and_given_back() {
        let ahead = ReadAhead::new(10);
        let turns: Vec<_> = (0..MAX_READS).map(|_| ahead.start().unwrap()).collect();
        assert!(ahead.start().is_none());
        drop(turns);
        assert!(ahead.start().is_some());
        assert!(ReadAhead::new(0).start().is_none(), "0 turns it off");
    }
}
