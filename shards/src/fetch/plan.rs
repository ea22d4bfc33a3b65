//! Which store reads one fetch makes: the runs of batches its partitions need from objects not
//! in the cache, grouped by object, with neighbouring ranges of one object joined into one read
//! (a WAL object holds many partitions side by side, so a consumer of several partitions needs
//! several ranges of each object). Pure, so it is tested alone.

use std::collections::BTreeMap;
use std::sync::Arc;

/// Two ranges of one object are read together across a gap of at most this many bytes... (a
/// GET costs a round trip and a request fee; the bytes of a gap, within a region, neither: a
/// shard owning every other partition of a topic finds gaps the size of its own ranges).
pub const JOIN_GAP_BYTES: usize = 1 << 20;

/// A range of an object that one run of one partition needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    pub key: Arc<str>,
    pub offset: usize,
    pub len: usize,
}

/// One store read, and which wanted ranges (by index) it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub key: Arc<str>,
    pub offset: usize,
    pub len: usize,
    pub serves: Vec<usize>,
}

/// The reads that serve every wanted range. ...and only while the span's gaps together stay
/// no larger than the bytes wanted in it, so a read is at most twice what it serves (a gap
/// compared alone would let several, each below the wanted bytes so far, add up beyond them).
pub fn spans(wanted: &[Wanted]) -> Vec<Span> {
    let mut by_object: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, w) in wanted.iter().enumerate() {
        by_object.entry(&w.key).or_default().push(i);
    }
    let mut spans = Vec::new();
    for (_, mut indices) in by_object {
        indices.sort_by_key(|&i| (wanted[i].offset, wanted[i].len));
        // The span being built, the bytes wanted in it, and its gaps' bytes.
        let mut current: Option<(Span, usize, usize)> = None;
        for i in indices {
            let w = &wanted[i];
            if let Some((span, wanted_bytes, gap_bytes)) = current.as_mut() {
                let end = span.offset + span.len;
                let gap = w.offset.saturating_sub(end);
                if gap <= JOIN_GAP_BYTES && *gap_bytes + gap <= *wanted_bytes {
                    span.len = (w.offset + w.len).max(end) - span.offset;
                    span.serves.push(i);
                    *wanted_bytes += w.len;
                    *gap_bytes += gap;
                    continue;
                }
            }
            if let Some((span, _, _)) = current.take() {
                spans.push(span);
            }
            let span = Span {
                key: w.key.clone(),
                offset: w.offset,
                len: w.len,
                serves: vec![i],
            };
            current = Some((span, w.len, 0));
        }
        if let Some((span, _, _)) = current {
            spans.push(span);
        }
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn want(key: &str, offset: usize, len: usize) -> Wanted {
        Wanted {
            key: Arc::from(key),
            offset,
            len,
        }
    }

    #[test]
    fn neighbouring_ranges_of_one_object_are_one_read() {
        let wanted = [
            want("a", 1000, 100),
            want("b", 0, 10),
            want("a", 0, 1000),
            want("a", 1200, 100),
        ];
        let spans = spans(&wanted);
        assert_eq!(spans.len(), 2);
        let a = spans.iter().find(|s| &*s.key == "a").unwrap();
        assert_eq!((a.offset, a.len), (0, 1300));
        assert_eq!(a.serves, vec![2, 0, 3]);
    }

    #[test]
    fn a_wide_gap_splits_the_read() {
        let wanted = [want("a", 0, 100), want("a", 100 + 101, 100)];
        assert_eq!(spans(&wanted).len(), 2, "gap above the wanted bytes");
        let big = JOIN_GAP_BYTES * 4;
        let wanted = [want("a", 0, big), want("a", big + JOIN_GAP_BYTES + 1, 10)];
        assert_eq!(spans(&wanted).len(), 2, "gap above the join limit");
    }

    proptest! {
        #[test]
        fn every_range_is_served_once_and_little_is_read_beyond_it(
            ranges in proptest::collection::vec((0..3u8, 0..200_000usize, 1..50_000usize), 1..40)
        ) {
            let wanted: Vec<Wanted> = ranges
                .iter()
                .map(|&(k, offset, len)| want(&format!("k{k}"), offset, len))
                .collect();
            let spans = spans(&wanted);
            let mut served = vec![0; wanted.len()];
            let mut read = 0;
            for span in &spans {
                read += span.len;
                for &i in &span.serves {
                    served[i] += 1;
                    let w = &wanted[i];
                    prop_assert_eq!(&w.key, &span.key);
                    prop_assert!(w.offset >= span.offset);
                    prop_assert!(w.offset + w.len <= span.offset + span.len);
                }
            }
            prop_assert!(served.iter().all(|&n| n == 1));
            let wanted_bytes: usize = wanted.iter().map(|w| w.len).sum();
            prop_assert!(read <= 2 * wanted_bytes);
        }
    }
}
