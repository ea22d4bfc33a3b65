//! One record's fields, and reading them from a batch's payload: varints, lengths checked
//! against what the record declared, and bytes passed over in place (a slice) or read and
//! dropped (a decompressor).

use std::io::{self, Read};

/// Kafka's "no timestamp".
pub const NO_TIMESTAMP: i64 = -1;

/// One record's place in its batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordPosition {
    pub offset_delta: i32,
    pub timestamp: i64,
    /// Whether its key is not null (a compacted topic refuses records without one).
    pub has_key: bool,
}

/// How many of a field's first bytes `check_records_noting_heads` keeps.
pub const FIELD_HEAD_BYTES: usize = 5;

/// The first bytes of a record's key or value (all of it when shorter): what a check that
/// needs only a field's start looks at (a schema registry's wire-format prefix).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldHead {
    bytes: [u8; FIELD_HEAD_BYTES],
    len: u8,
}

impl FieldHead {
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

/// One record of an inflated batch, every field in place: for compaction (which keeps or
/// drops it by key) and for clients that print records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyedRecord<'a> {
    pub offset_delta: i32,
    /// From the batch's base timestamp.
    pub timestamp_delta: i64,
    pub key: Option<&'a [u8]>,
    /// None: a tombstone deleting its key.
    pub value: Option<&'a [u8]>,
    pub headers: Vec<(&'a [u8], Option<&'a [u8]>)>,
    /// A null value: a tombstone deleting its key.
    pub is_tombstone: bool,
    /// The whole record as encoded, length prefix included, to copy it unchanged.
    pub encoded: &'a [u8],
}

/// A record's timestamp from its batch's base ("none" stays "none").
pub(super) fn record_timestamp(base_timestamp: i64, timestamp_delta: i64) -> i64 {
    if base_timestamp == NO_TIMESTAMP {
        NO_TIMESTAMP
    } else {
        base_timestamp.saturating_add(timestamp_delta)
    }
}

/// Passing over `n` bytes of a record: in place for a slice, by reading (and dropping) them
/// for a decompressor, through `io::copy`'s uninitialised buffer rather than a zeroed one.
pub(super) trait Skip: Read {
    fn skip_bytes(&mut self, n: u64) -> io::Result<()>;
}

impl Skip for &[u8] {
    fn skip_bytes(&mut self, n: u64) -> io::Result<()> {
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        match self.get(n..) {
            Some(rest) => {
                *self = rest;
                Ok(())
            }
            None => Err(io::ErrorKind::UnexpectedEof.into()),
        }
    }
}

impl Skip for Box<dyn Read + '_> {
    fn skip_bytes(&mut self, n: u64) -> io::Result<()> {
        let copied = io::copy(&mut self.take(n), &mut io::sink())?;
        if copied < n {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        Ok(())
    }
}

pub(super) enum RecordError {
    Malformed(String),
    Io(io::Error),
}

impl From<io::Error> for RecordError {
    fn from(e: io::Error) -> Self {
        match e.kind() {
            io::ErrorKind::UnexpectedEof => RecordError::Malformed("cut short".into()),
            _ => RecordError::Io(e),
        }
    }
}

pub(super) struct Reader<R> {
    pub(super) inner: R,
    /// Bytes read so far, to check each record's declared length.
    pub(super) read: u64,
}

impl<R: Skip> Reader<R> {
    pub(super) fn new(inner: R) -> Reader<R> {
        Reader { inner, read: 0 }
    }

    pub(super) fn byte(&mut self) -> Result<u8, RecordError> {
        let mut b = [0u8; 1];
        self.inner.read_exact(&mut b)?;
        self.read += 1;
        Ok(b[0])
    }

    /// A zigzag varint of at most `max_bytes` bytes (5 for int32, 10 for int64).
    pub(super) fn varint(&mut self, max_bytes: u32) -> Result<i64, RecordError> {
        let mut raw = 0u64;
        for i in 0..max_bytes {
            let b = self.byte()?;
            raw |= ((b & 0x7f) as u64) << (7 * i);
            if b & 0x80 == 0 {
                return Ok((raw >> 1) as i64 ^ -((raw & 1) as i64));
            }
        }
        Err(RecordError::Malformed("a varint runs too long".into()))
    }

    pub(super) fn varint32(&mut self) -> Result<i32, RecordError> {
        let v = self.varint(5)?;
        i32::try_from(v).map_err(|_| RecordError::Malformed("a varint overflows 32 bits".into()))
    }

    pub(super) fn skip(&mut self, n: u64) -> Result<(), RecordError> {
        self.inner.skip_bytes(n)?;
        self.read += n;
        Ok(())
    }

    /// A length-prefixed field: `nullable` allows -1. Whether it was present (not null).
    pub(super) fn skip_field(&mut self, what: &str, nullable: bool) -> Result<bool, RecordError> {
        match self.varint32()? {
            -1 if nullable => Ok(false),
            n if n < 0 => Err(RecordError::Malformed(format!("{what} length {n}"))),
            n => self.skip(n as u64).map(|()| true),
        }
    }

    /// One record, its declared length checked against what it holds: (timestamp delta,
    /// offset delta, what `key` and `value` made of those fields).
    pub(super) fn record_with<K, V>(
        &mut self,
        key: impl FnOnce(&mut Self) -> Result<K, RecordError>,
        value: impl FnOnce(&mut Self) -> Result<V, RecordError>,
        mut header: impl FnMut(&mut Self) -> Result<(), RecordError>,
    ) -> Result<(i64, i32, K, V), RecordError> {
        let length = self.varint32()?;
        if length <= 0 {
            return Err(RecordError::Malformed(format!("length {length}")));
        }
        let start = self.read;
        let _attributes = self.byte()?;
        let timestamp_delta = self.varint(10)?;
        let offset_delta = self.varint32()?;
        let key = key(self)?;
        let value = value(self)?;
        let headers = self.varint32()?;
        if headers < 0 {
            return Err(RecordError::Malformed(format!("{headers} headers")));
        }
        for _ in 0..headers {
            header(self)?;
        }
        if self.read - start != length as u64 {
            return Err(RecordError::Malformed(format!(
                "declares {length} bytes but holds {}",
                self.read - start
            )));
        }
        Ok((timestamp_delta, offset_delta, key, value))
    }

    pub(super) fn record(&mut self, base_timestamp: i64) -> Result<RecordPosition, RecordError> {
        let (timestamp_delta, offset_delta, has_key, _) = self.record_with(
            |r| r.skip_field("key", true),
            |r| r.skip_field("value", true),
            Self::skip_header,
        )?;
        Ok(RecordPosition {
            offset_delta,
            timestamp: record_timestamp(base_timestamp, timestamp_delta),
            has_key,
        })
    }

    /// `record`, with the heads of its key and value.
    pub(super) fn record_noting_heads(
        &mut self,
        base_timestamp: i64,
    ) -> Result<(RecordPosition, Option<FieldHead>, Option<FieldHead>), RecordError> {
        let (timestamp_delta, offset_delta, key, value) = self.record_with(
            |r| r.head_field("key"),
            |r| r.head_field("value"),
            Self::skip_header,
        )?;
        let position = RecordPosition {
            offset_delta,
            timestamp: record_timestamp(base_timestamp, timestamp_delta),
            has_key: key.is_some(),
        };
        Ok((position, key, value))
    }

    pub(super) fn skip_header(&mut self) -> Result<(), RecordError> {
        self.skip_field("header key", false)?;
        self.skip_field("header value", true).map(drop)
    }

    /// A nullable length-prefixed field passed over, its first bytes kept (None: null).
    pub(super) fn head_field(&mut self, what: &str) -> Result<Option<FieldHead>, RecordError> {
        let n = match self.varint32()? {
            -1 => return Ok(None),
            n if n < 0 => return Err(RecordError::Malformed(format!("{what} length {n}"))),
            n => n as u64,
        };
        let mut head = FieldHead {
            bytes: [0; FIELD_HEAD_BYTES],
            len: n.min(FIELD_HEAD_BYTES as u64) as u8,
        };
        self.inner
            .read_exact(&mut head.bytes[..head.len as usize])?;
        self.read += u64::from(head.len);
        self.skip(n - u64::from(head.len))?;
        Ok(Some(head))
    }
}

impl<'a> Reader<&'a [u8]> {
    /// A length-prefixed field in place: None when null (-1).
    pub(super) fn field(&mut self, what: &str) -> Result<Option<&'a [u8]>, RecordError> {
        match self.varint32()? {
            -1 => Ok(None),
            n if n < 0 => Err(RecordError::Malformed(format!("{what} length {n}"))),
            n => {
                let bytes = self.inner.get(..n as usize).ok_or_else(|| {
                    RecordError::Malformed(format!("{what} of {n} bytes cut short"))
                })?;
                self.skip(n as u64)?;
                Ok(Some(bytes))
            }
        }
    }

    /// One record, every field; `encoded` is left for the caller to fill.
    pub(super) fn keyed_record(&mut self) -> Result<KeyedRecord<'a>, RecordError> {
        let mut headers = Vec::new();
        let (timestamp_delta, offset_delta, key, value) = self.record_with(
            |r| r.field("key"),
            |r| r.field("value"),
            |r| {
                let name = r
                    .field("header key")?
                    .ok_or_else(|| RecordError::Malformed("a null header key".into()))?;
                headers.push((name, r.field("header value")?));
                Ok(())
            },
        )?;
        Ok(KeyedRecord {
            offset_delta,
            timestamp_delta,
            key,
            value,
            headers,
            is_tombstone: value.is_none(),
            encoded: &[],
        })
    }
}
