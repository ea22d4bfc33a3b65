//! What a ShareFetch sends for one share-partition: the record batches read cover the
//! acquired records (whole batches, as Kafka sends them; the client keeps only the acquired
//! offsets), and the acquired records as runs of one delivery count.

use std::ops::Range;

use bytes::Bytes;
use shoal_coordinator::AbortedTransaction;
use shoal_wal::batch::BatchHeader;

use super::partition::Acquired;

/// One run of acquired records (ShareFetch's AcquiredRecords).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcquiredRun {
    pub first_offset: i64,
    pub last_offset: i64,
    pub deliveries: u16,
}

/// Each whole batch in `records`: its first offset, the offset after it, and its bytes.
fn batches(records: &[u8]) -> impl Iterator<Item = (i64, i64, Range<usize>)> + '_ {
    headers(records).map(|(header, end, bytes)| (header.base_offset, end, bytes))
}

/// Each whole batch's header, the offset after it, and its bytes.
fn headers(records: &[u8]) -> impl Iterator<Item = (BatchHeader, i64, Range<usize>)> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        let header = BatchHeader::parse(records.get(at..)?).ok()?;
        let bytes = at..at + header.size_bytes;
        at += header.size_bytes;
        let end = header.base_offset.checked_add(header.offset_count())?;
        Some((header, end, bytes))
    })
}

/// For `share.isolation.level=read_committed`: the offsets of `records` a share group never
/// delivers, the transaction markers and the batches of the aborted transactions listed (as
/// Fetch lists them for a read_committed consumer). They are archived as they are acquired.
pub fn never_delivered(records: &[u8], aborted: &[AbortedTransaction]) -> Vec<Range<i64>> {
    headers(records)
        .filter(|(h, _, _)| {
            h.is_control()
                || (h.is_transactional()
                    && aborted.iter().any(|a| {
                        a.producer_id == h.producer_id
                            && (a.first_offset..=a.last_offset).contains(&h.base_offset)
                    }))
        })
        .map(|(h, end, _)| h.base_offset..end)
        .collect()
}

/// The offset after the last whole batch read (None when none was).
pub fn end_of_records(records: &[u8]) -> Option<i64> {
    batches(records).last().map(|(_, end, _)| end)
}

/// The batches of `records` that hold any of the acquired offsets (`acquired` in offset
/// order), as one slice of it: the batches are contiguous, so no copy is made.
pub fn covering(records: &Bytes, acquired: &[Acquired]) -> Bytes {
    let (Some(first), Some(last)) = (acquired.first(), acquired.last()) else {
        return Bytes::new();
    };
    let mut span: Option<std::ops::Range<usize>> = None;
    for (base, end, bytes) in batches(records) {
        if end <= first.offset || base > last.offset {
            continue;
        }
        span = Some(match span {
            Some(span) => span.start..bytes.end,
            None => bytes,
        });
    }
    span.map_or_else(Bytes::new, |span| records.slice(span))
}

/// The acquired records as runs of consecutive offsets with one delivery count.
pub fn runs(acquired: &[Acquired]) -> Vec<AcquiredRun> {
    let mut runs: Vec<AcquiredRun> = Vec::new();
    for a in acquired {
        match runs.last_mut() {
            Some(run) if run.last_offset + 1 == a.offset && run.deliveries == a.deliveries => {
                run.last_offset = a.offset;
            }
            _ => runs.push(AcquiredRun {
                first_offset: a.offset,
                last_offset: a.offset,
                deliveries: a.deliveries,
            }),
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_wal::batch::patch_base_offset;
    use shoal_wal::batch::BatchBuilder;
    use shoal_wal::decompress::Codec;

    /// Batches of `counts` records each, from offset 0.
    fn log(counts: &[usize]) -> Bytes {
        let mut out = Vec::new();
        let mut base = 0;
        for &count in counts {
            let mut builder = BatchBuilder::new(0);
            for i in 0..count {
                builder = builder.record(i as i64, None, Some(b"v"), &[]);
            }
            let mut batch = builder.build(Codec::None).unwrap();
            patch_base_offset(&mut batch, base);
            base += count as i64;
            out.extend_from_slice(&batch);
        }
        Bytes::from(out)
    }

    fn acquired(offsets: &[(i64, u16)]) -> Vec<Acquired> {
        offsets
            .iter()
            .map(|&(offset, deliveries)| Acquired { offset, deliveries })
            .collect()
    }

    #[test]
    fn the_batches_sent_are_those_that_hold_acquired_records() {
        let records = log(&[3, 3, 3]);
        assert_eq!(end_of_records(&records), Some(9));
        let sizes: Vec<usize> = batches(&records).map(|(_, _, b)| b.len()).collect();
        let middle = covering(&records, &acquired(&[(4, 1), (5, 1)]));
        assert_eq!(middle, records.slice(sizes[0]..sizes[0] + sizes[1]));
        let two = covering(&records, &acquired(&[(2, 1), (3, 1)]));
        assert_eq!(two, records.slice(0..sizes[0] + sizes[1]));
        assert!(covering(&records, &[]).is_empty());
        // A cut-off batch at the end is not read.
        let cut = records.slice(..records.len() - 1);
        assert_eq!(end_of_records(&cut), Some(6));
    }

    #[test]
    fn markers_and_aborted_batches_are_never_delivered() {
        let mut out = Vec::new();
        // A committed transaction's batch, an aborted one's, a marker, a plain batch.
        let batches = [(7, false), (8, false), (8, true), (-1, false)];
        for (base, (pid, control)) in (0i64..).zip(batches) {
            let mut builder = BatchBuilder::new(0).record(0, None, Some(b"v"), &[]);
            if pid >= 0 {
                builder = builder.producer(pid, 0, 0).transactional();
            }
            if control {
                builder = builder.control();
            }
            let mut batch = builder.build(Codec::None).unwrap();
            patch_base_offset(&mut batch, base);
            out.extend_from_slice(&batch);
        }
        let aborted = [AbortedTransaction {
            producer_id: 8,
            first_offset: 1,
            last_offset: 2,
        }];
        assert_eq!(never_delivered(&out, &aborted), vec![1..2, 2..3]);
        assert_eq!(never_delivered(&out, &[]), vec![2..3]);
    }

    #[test]
    fn runs_break_at_gaps_and_at_a_new_delivery_count() {
        let got = runs(&acquired(&[(1, 1), (2, 1), (3, 2), (5, 2)]));
        let run = |first_offset, last_offset, deliveries| AcquiredRun {
            first_offset,
            last_offset,
            deliveries,
        };
        assert_eq!(got, vec![run(1, 2, 1), run(3, 3, 2), run(5, 5, 2)]);
    }
}
