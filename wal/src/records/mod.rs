//! The records inside a v2 batch, read the way Kafka's log validator reads them: one at a time
//! from the (inflated) payload, so memory stays at one record's varints whatever the batch
//! claims. Used to validate produced batches and by every reader of stored ones.

use std::io::Read;

use crate::batch::{BatchHeader, BATCH_HEADER_BYTES};
use crate::decompress::{inflate, Codec};
use crate::WalError;
pub use reader::{FieldHead, KeyedRecord, RecordPosition, FIELD_HEAD_BYTES, NO_TIMESTAMP};
use reader::{Reader, RecordError, Skip};

mod reader;

/// What a batch's records add up to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordsSummary {
    pub count: i32,
    /// The largest record timestamp (CreateTime), as the header should say.
    pub max_timestamp: i64,
    /// The records with the earliest and the latest timestamp other than "none", as (index
    /// in the batch, timestamp): what a topic's timestamp bounds are checked against.
    pub earliest: Option<(i32, i64)>,
    pub latest: Option<(i32, i64)>,
    /// The index of the first record without a key, if any (compacted topics refuse it).
    pub first_keyless: Option<i32>,
}

/// A record's offset delta and the heads of its key and value (None: null).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldHeads {
    pub offset_delta: i32,
    pub key: Option<FieldHead>,
    pub value: Option<FieldHead>,
}

/// How a batch's records must be numbered: as a producer sends them (offset deltas 0, 1, 2,
/// ... to the header's last delta), or as stored after compaction (rising, some missing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Numbering {
    Produced,
    Stored,
}

/// Checks every record of `batch`: they parse, there are as many as the header says, their
/// offset deltas run 0, 1, 2, ... to the header's last delta, no timestamp is negative but
/// "none" (-1), and the payload inflates to at most `inflated_max` bytes.
pub fn check_records(
    batch: &[u8],
    header: &BatchHeader,
    inflated_max: usize,
) -> Result<RecordsSummary, WalError> {
    summarize(batch, header, inflated_max, None)
}

/// `check_records`, noting each record's field heads in `heads` on the way (one pass).
pub fn check_records_noting_heads(
    batch: &[u8],
    header: &BatchHeader,
    inflated_max: usize,
    heads: &mut Vec<FieldHeads>,
) -> Result<RecordsSummary, WalError> {
    summarize(batch, header, inflated_max, Some(heads))
}

fn summarize(
    batch: &[u8],
    header: &BatchHeader,
    inflated_max: usize,
    heads: Option<&mut Vec<FieldHeads>>,
) -> Result<RecordsSummary, WalError> {
    check_count(header)?;
    let mut summary = Summarize::default();
    let visit = |p| summary.visit(p);
    let count = for_each_record(
        batch,
        header,
        inflated_max,
        Numbering::Produced,
        heads,
        visit,
    )?;
    Ok(summary.finish(count))
}

/// The indexes of the records without a key, for a compacted topic's refusal; bounded by
/// the records present.
pub fn keyless_records(
    batch: &[u8],
    header: &BatchHeader,
    inflated_max: usize,
) -> Result<Vec<i32>, WalError> {
    let mut keyless = Vec::new();
    for_each_record(
        batch,
        header,
        inflated_max,
        Numbering::Produced,
        None,
        |p| {
            if !p.has_key {
                keyless.push(p.offset_delta);
            }
            Ok(true)
        },
    )?;
    Ok(keyless)
}

/// The payload of a stored batch, inflated (at most `inflated_max` bytes) when compressed.
pub fn inflate_payload(
    batch: &[u8],
    header: &BatchHeader,
    inflated_max: usize,
) -> Result<Vec<u8>, WalError> {
    let codec = Codec::from_id(header.compression_codec())?;
    let mut inflated = Vec::new();
    inflate(codec, payload(batch, header)?, inflated_max)?
        .read_to_end(&mut inflated)
        .map_err(|e| WalError::CorruptCompression(e.to_string()))?;
    Ok(inflated)
}

/// `visit` gets the records of `batch` with their keys and values: read where they lie when
/// the batch is not compressed, from its payload inflated (at most `inflated_max` bytes)
/// when it is.
pub fn with_keyed_records<T>(
    batch: &[u8],
    header: &BatchHeader,
    inflated_max: usize,
    visit: impl FnOnce(&[KeyedRecord<'_>]) -> T,
) -> Result<T, WalError> {
    if Codec::from_id(header.compression_codec())? == Codec::None {
        return Ok(visit(&keyed_records(payload(batch, header)?, header)?));
    }
    let inflated = inflate_payload(batch, header, inflated_max)?;
    Ok(visit(&keyed_records(&inflated, header)?))
}

/// The records of a stored batch's inflated payload (`inflate_payload`) with their keys,
/// numbered as stored batches may be; their count is bounded by the bytes present.
pub fn keyed_records<'a>(
    inflated: &'a [u8],
    header: &BatchHeader,
) -> Result<Vec<KeyedRecord<'a>>, WalError> {
    check_stored_count(header)?;
    // Every record takes at least 7 bytes: no count past that is allocated.
    let mut records = Vec::with_capacity((header.record_count as usize).min(inflated.len() / 7));
    let mut reader = Reader::new(inflated);
    let mut previous = -1;
    for index in 0..header.record_count {
        let at_fault = |what: String| WalError::InvalidRecord { index, what };
        let start = reader.inner;
        let record = reader.keyed_record().map_err(|e| match e {
            RecordError::Malformed(what) => at_fault(what),
            RecordError::Io(e) => at_fault(e.to_string()),
        })?;
        let used = start.len() - reader.inner.len();
        if record.offset_delta <= previous || record.offset_delta > header.last_offset_delta {
            return Err(at_fault(format!(
                "offset delta {} after {previous}",
                record.offset_delta
            )));
        }
        previous = record.offset_delta;
        records.push(KeyedRecord {
            encoded: &start[..used],
            ..record
        });
    }
    if !reader.inner.is_empty() {
        return Err(invalid("bytes after the last record".into()));
    }
    Ok(records)
}

/// Checks every record as `check_records` does and gives them back inflated, for a batch the
/// broker recompresses: its payload is inflated once, for both.
pub fn check_and_inflate_records(
    batch: &[u8],
    header: &BatchHeader,
    inflated_max: usize,
) -> Result<(RecordsSummary, Vec<u8>), WalError> {
    check_count(header)?;
    let codec = Codec::from_id(header.compression_codec())?;
    let mut inflated = Vec::new();
    inflate(codec, payload(batch, header)?, inflated_max)?
        .read_to_end(&mut inflated)
        .map_err(|e| WalError::CorruptCompression(e.to_string()))?;
    let mut summary = Summarize::default();
    let count = visit_records(
        Reader::new(&inflated[..]),
        header,
        codec,
        Numbering::Produced,
        None,
        |p| summary.visit(p),
    )?;
    Ok((summary.finish(count), inflated))
}

/// A stored batch may hold fewer records than offsets (compaction removed some), never more.
fn check_stored_count(header: &BatchHeader) -> Result<(), WalError> {
    if header.record_count as i64 > header.last_offset_delta as i64 + 1 {
        return Err(invalid(format!(
            "{} records but the last offset delta is {}",
            header.record_count, header.last_offset_delta
        )));
    }
    Ok(())
}

fn check_count(header: &BatchHeader) -> Result<(), WalError> {
    if header.last_offset_delta as i64 + 1 != header.record_count as i64 {
        return Err(invalid(format!(
            "{} records but the last offset delta is {}",
            header.record_count, header.last_offset_delta
        )));
    }
    Ok(())
}

/// The largest timestamp, refusing negative ones but "none", and the first keyless record.
struct Summarize {
    max_timestamp: i64,
    earliest: Option<(i32, i64)>,
    latest: Option<(i32, i64)>,
    first_keyless: Option<i32>,
}

impl Default for Summarize {
    fn default() -> Self {
        Summarize {
            max_timestamp: NO_TIMESTAMP,
            earliest: None,
            latest: None,
            first_keyless: None,
        }
    }
}

impl Summarize {
    fn visit(&mut self, position: RecordPosition) -> Result<bool, WalError> {
        if position.timestamp < NO_TIMESTAMP {
            return Err(WalError::InvalidTimestamp {
                index: position.offset_delta,
                timestamp: position.timestamp,
            });
        }
        self.max_timestamp = self.max_timestamp.max(position.timestamp);
        if position.timestamp != NO_TIMESTAMP {
            let here = (position.offset_delta, position.timestamp);
            if self.earliest.is_none_or(|(_, t)| position.timestamp < t) {
                self.earliest = Some(here);
            }
            if self.latest.is_none_or(|(_, t)| position.timestamp > t) {
                self.latest = Some(here);
            }
        }
        if !position.has_key && self.first_keyless.is_none() {
            self.first_keyless = Some(position.offset_delta);
        }
        Ok(true)
    }

    fn finish(self, count: i32) -> RecordsSummary {
        RecordsSummary {
            count,
            max_timestamp: self.max_timestamp,
            earliest: self.earliest,
            latest: self.latest,
            first_keyless: self.first_keyless,
        }
    }
}

/// `for_each_record` over a stored batch (compaction may have left gaps in its offsets).
fn for_each_stored_record(
    batch: &[u8],
    header: &BatchHeader,
    inflated_max: usize,
    visit: impl FnMut(RecordPosition) -> Result<bool, WalError>,
) -> Result<i32, WalError> {
    check_stored_count(header)?;
    for_each_record(batch, header, inflated_max, Numbering::Stored, None, visit)
}

/// The first record whose timestamp is `target` or later (ListOffsets by time).
pub fn first_record_at_or_after(
    batch: &[u8],
    header: &BatchHeader,
    target: i64,
    inflated_max: usize,
) -> Result<Option<RecordPosition>, WalError> {
    let mut found = None;
    for_each_stored_record(batch, header, inflated_max, |position| {
        if position.timestamp >= target {
            found = Some(position);
            return Ok(false);
        }
        Ok(true)
    })?;
    Ok(found)
}

/// The first record holding the batch's largest timestamp (ListOffsets' max timestamp).
pub fn latest_record(
    batch: &[u8],
    header: &BatchHeader,
    inflated_max: usize,
) -> Result<Option<RecordPosition>, WalError> {
    let mut latest: Option<RecordPosition> = None;
    for_each_stored_record(batch, header, inflated_max, |position| {
        if latest.is_none_or(|l| position.timestamp > l.timestamp) {
            latest = Some(position);
        }
        Ok(true)
    })?;
    Ok(latest)
}

/// The type of an uncompressed control batch's first record (its key's second int16: 0 abort,
/// 1 commit for transaction markers); None when that record does not read as one.
pub fn control_record_type(batch: &[u8]) -> Option<i16> {
    let mut reader = Reader::new(batch.get(BATCH_HEADER_BYTES..)?);
    let _length = reader.varint32().ok()?;
    let _attributes = reader.byte().ok()?;
    let _timestamp_delta = reader.varint(10).ok()?;
    let _offset_delta = reader.varint32().ok()?;
    if reader.varint32().ok()? < 4 {
        return None;
    }
    let mut key = [0u8; 4];
    reader.inner.read_exact(&mut key).ok()?;
    Some(i16::from_be_bytes([key[2], key[3]]))
}

/// Calls `visit` for each record in order until it returns false; how many were visited.
/// Reading every record also proves none is missing, extra or cut short.
/// `heads`: where each record's field heads go, when a caller wants them.
fn for_each_record(
    batch: &[u8],
    header: &BatchHeader,
    inflated_max: usize,
    numbering: Numbering,
    heads: Option<&mut Vec<FieldHeads>>,
    visit: impl FnMut(RecordPosition) -> Result<bool, WalError>,
) -> Result<i32, WalError> {
    let payload = payload(batch, header)?;
    let codec = Codec::from_id(header.compression_codec())?;
    // Uncompressed records are walked in place: skipping a value copies nothing.
    match codec {
        Codec::None => visit_records(Reader::new(payload), header, codec, numbering, heads, visit),
        _ => {
            let inflated = inflate(codec, payload, inflated_max)?;
            visit_records(
                Reader::new(inflated),
                header,
                codec,
                numbering,
                heads,
                visit,
            )
        }
    }
}

/// The (possibly compressed) records after the header.
fn payload<'a>(batch: &'a [u8], header: &BatchHeader) -> Result<&'a [u8], WalError> {
    batch
        .get(BATCH_HEADER_BYTES..header.size_bytes)
        .ok_or_else(|| invalid("the batch is shorter than its header says".into()))
}

/// `heads`: where each record's field heads go, when a caller wants them.
fn visit_records<R: Skip>(
    mut records: Reader<R>,
    header: &BatchHeader,
    codec: Codec,
    numbering: Numbering,
    mut heads: Option<&mut Vec<FieldHeads>>,
    mut visit: impl FnMut(RecordPosition) -> Result<bool, WalError>,
) -> Result<i32, WalError> {
    let mut previous = -1;
    for index in 0..header.record_count {
        let at_fault = |what: String| WalError::InvalidRecord { index, what };
        let read =
            match heads.as_deref_mut() {
                None => records.record(header.base_timestamp),
                Some(heads) => records.record_noting_heads(header.base_timestamp).map(
                    |(position, key, value)| {
                        heads.push(FieldHeads {
                            offset_delta: position.offset_delta,
                            key,
                            value,
                        });
                        position
                    },
                ),
            };
        let mut position = read.map_err(|e| match e {
            RecordError::Malformed(what) => at_fault(what),
            RecordError::Io(e) if codec == Codec::None => at_fault(e.to_string()),
            RecordError::Io(e) => WalError::CorruptCompression(e.to_string()),
        })?;
        if header.is_log_append_time() {
            // The broker's time, in the header, is every record's time.
            position.timestamp = header.max_timestamp;
        }
        let numbered = match numbering {
            Numbering::Produced => position.offset_delta == index,
            Numbering::Stored => {
                position.offset_delta > previous
                    && position.offset_delta <= header.last_offset_delta
            }
        };
        if !numbered {
            return Err(at_fault(format!(
                "offset delta {} where {index} belongs",
                position.offset_delta
            )));
        }
        previous = position.offset_delta;
        if !visit(position)? {
            return Ok(index + 1);
        }
    }
    let mut extra = [0u8; 1];
    match records.inner.read(&mut extra) {
        Ok(0) => Ok(header.record_count),
        Ok(_) => Err(invalid("bytes after the last record".into())),
        Err(e) if codec == Codec::None => Err(invalid(e.to_string())),
        Err(e) => Err(WalError::CorruptCompression(e.to_string())),
    }
}

fn invalid(what: String) -> WalError {
    WalError::InvalidRecords(what)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::batch::tests::sample_batch;
    use crate::batch::{encode_record, RecordHeader};

    /// Encoded records: (timestamp delta, offset delta, value) each, one header on the first.
    pub fn records(specs: &[(i64, i64, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, (ts, offset, value)) in specs.iter().enumerate() {
            let headers: &[RecordHeader] = if i == 0 { &[(b"h", None)] } else { &[] };
            encode_record(&mut out, *offset as i32, *ts, None, Some(value), headers);
        }
        out
    }

    fn header(batch: &[u8]) -> BatchHeader {
        BatchHeader::parse_validated(batch).unwrap()
    }

    #[test]
    fn stored_records_give_every_field_headers_included() {
        let mut body = Vec::new();
        let headers: &[RecordHeader] = &[(b"trace", Some(b"abc")), (b"empty", None)];
        encode_record(&mut body, 0, 5, Some(b"k"), Some(b"v"), headers);
        encode_record(&mut body, 1, 7, None, None, &[]);
        let batch = sample_batch(2, &body);
        let header = header(&batch);
        let inflated = inflate_payload(&batch, &header, 1 << 20).unwrap();
        let records = keyed_records(&inflated, &header).unwrap();
        assert_eq!(records[0].timestamp_delta, 5);
        assert_eq!(
            (records[0].key, records[0].value),
            (Some(&b"k"[..]), Some(&b"v"[..]))
        );
        assert_eq!(records[0].headers, headers);
        assert_eq!((records[1].key, records[1].value), (None, None));
        assert!(records[1].is_tombstone && records[1].headers.is_empty());
    }

    #[test]
    fn heads_are_noted_in_the_same_pass_as_the_checks() {
        let mut body = Vec::new();
        encode_record(
            &mut body,
            0,
            5,
            Some(b"key"),
            Some(b"\0\0\0\0\x07data"),
            &[(b"h", None)],
        );
        encode_record(&mut body, 1, 7, None, None, &[]);
        let batch = sample_batch(2, &body);
        let mut heads = Vec::new();
        let summary =
            check_records_noting_heads(&batch, &header(&batch), 1 << 20, &mut heads).unwrap();
        assert_eq!(
            summary,
            check_records(&batch, &header(&batch), 1 << 20).unwrap()
        );
        assert_eq!(heads.len(), 2);
        assert_eq!(heads[0].key.unwrap().as_slice(), b"key");
        assert_eq!(heads[0].value.unwrap().as_slice(), b"\0\0\0\0\x07");
        assert_eq!(
            (heads[1].offset_delta, heads[1].key, heads[1].value),
            (1, None, None)
        );
        // A record cut short is refused as check_records refuses it.
        let short = sample_batch(2, &body[..body.len() - 1]);
        assert!(check_records_noting_heads(&short, &header(&short), 1 << 20, &mut heads).is_err());
    }

    #[test]
    fn well_formed_records_pass_and_give_their_timestamps() {
        let body = records(&[(0, 0, b"a"), (30, 1, b"bb"), (10, 2, b"")]);
        let batch = sample_batch(3, &body);
        let summary = check_records(&batch, &header(&batch), 1 << 20).unwrap();
        // sample_batch's base timestamp is 1000.
        assert_eq!(
            summary,
            RecordsSummary {
                count: 3,
                max_timestamp: 1030,
                earliest: Some((0, 1000)),
                latest: Some((1, 1030)),
                first_keyless: Some(0),
            }
        );
        let found = first_record_at_or_after(&batch, &header(&batch), 1005, 1 << 20).unwrap();
        assert_eq!(
            found,
            Some(RecordPosition {
                offset_delta: 1,
                timestamp: 1030,
                has_key: false,
            })
        );
    }

    #[test]
    fn records_that_do_not_add_up_are_refused() {
        let two = records(&[(0, 0, b"a"), (1, 1, b"b")]);
        // The header claims three records; two are there.
        let batch = sample_batch(3, &two);
        assert!(matches!(
            check_records(&batch, &header(&batch), 1 << 20),
            Err(WalError::InvalidRecord { index: 2, .. })
        ));
        // Offset deltas must run 0, 1, ...; the record at fault is named.
        let skipping = records(&[(0, 0, b"a"), (1, 5, b"b")]);
        let batch = sample_batch(2, &skipping);
        assert!(matches!(
            check_records(&batch, &header(&batch), 1 << 20),
            Err(WalError::InvalidRecord { index: 1, .. })
        ));
        // Trailing bytes after the last record.
        let mut trailing = records(&[(0, 0, b"a")]);
        trailing.push(7);
        let batch = sample_batch(1, &trailing);
        assert!(check_records(&batch, &header(&batch), 1 << 20).is_err());
        // A record claiming 2^31-1 records' worth of count: refused, nothing allocated.
        let one = records(&[(0, 0, b"a")]);
        let batch = sample_batch(i32::MAX, &one);
        assert!(check_records(&batch, &header(&batch), 1 << 20).is_err());
        // Garbage instead of records.
        let batch = sample_batch(1, &[0xff; 20]);
        assert!(check_records(&batch, &header(&batch), 1 << 20).is_err());
    }

    #[test]
    fn negative_timestamps_other_than_none_are_refused() {
        let body = records(&[(-2000, 0, b"a")]);
        let batch = sample_batch(1, &body);
        assert!(matches!(
            check_records(&batch, &header(&batch), 1 << 20),
            Err(WalError::InvalidTimestamp {
                index: 0,
                timestamp: -1000
            })
        ));
    }
}
