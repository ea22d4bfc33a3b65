//! Kafka v2 record-batch headers: parsing, CRC-32C validation and the fields the broker
//! rewrites: the base offset (outside the CRC) and, for LogAppendTime topics, the timestamp
//! type and max timestamp (inside it, so the CRC is recomputed).

use crate::WalError;

/// Bytes of the fixed v2 batch header, up to and including the record count.
pub const BATCH_HEADER_BYTES: usize = 61;
/// Bytes before the `batchLength` field counts from: baseOffset (8) + batchLength (4).
const LOG_OVERHEAD_BYTES: usize = 12;
/// The CRC covers everything from the attributes field to the end of the batch.
const CRC_COVERAGE_START: usize = 21;

pub(crate) const ATTR_TRANSACTIONAL: i16 = 0x10;
pub(crate) const ATTR_CONTROL: i16 = 0x20;
pub(crate) const ATTR_COMPRESSION_MASK: i16 = 0x07;
const ATTR_LOG_APPEND_TIME: i16 = 0x08;

/// The fixed header of one v2 record batch, as sent by the producer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    pub base_offset: i64,
    /// Total bytes of the batch including the 12 bytes of offset and length.
    pub size_bytes: usize,
    pub magic: i8,
    pub crc: u32,
    pub attributes: i16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub record_count: i32,
}

impl BatchHeader {
    /// Parses the header at the start of `buf` without checking the CRC.
    pub fn parse(buf: &[u8]) -> Result<BatchHeader, WalError> {
        if buf.len() < BATCH_HEADER_BYTES {
            return Err(WalError::BatchTooShort(buf.len()));
        }
        let batch_length = i32_at(buf, 8);
        let magic = buf[16] as i8;
        if magic != 2 {
            return Err(WalError::UnsupportedMagic(magic));
        }
        let declared = batch_length as i64 + LOG_OVERHEAD_BYTES as i64;
        if declared < BATCH_HEADER_BYTES as i64 || declared > buf.len() as i64 {
            return Err(WalError::BatchLengthMismatch {
                declared: declared.max(0) as usize,
                available: buf.len(),
            });
        }
        let header = BatchHeader {
            base_offset: i64_at(buf, 0),
            size_bytes: declared as usize,
            magic,
            crc: u32::from_be_bytes(buf[17..21].try_into().expect("4 bytes")),
            attributes: i16::from_be_bytes([buf[21], buf[22]]),
            last_offset_delta: i32_at(buf, 23),
            base_timestamp: i64_at(buf, 27),
            max_timestamp: i64_at(buf, 35),
            producer_id: i64_at(buf, 43),
            producer_epoch: i16::from_be_bytes([buf[51], buf[52]]),
            base_sequence: i32_at(buf, 53),
            record_count: i32_at(buf, 57),
        };
        if header.record_count <= 0 || header.last_offset_delta < 0 {
            return Err(WalError::InvalidRecordCount(header.record_count));
        }
        Ok(header)
    }

    /// Parses the header and checks the CRC-32C over the batch body.
    pub fn parse_validated(buf: &[u8]) -> Result<BatchHeader, WalError> {
        let header = Self::parse(buf)?;
        let computed = crc32c::crc32c(&buf[CRC_COVERAGE_START..header.size_bytes]);
        if computed != header.crc {
            return Err(WalError::CrcMismatch {
                stored: header.crc,
                computed,
            });
        }
        Ok(header)
    }

    /// How many offsets this batch occupies once assigned.
    pub fn offset_count(&self) -> i64 {
        self.last_offset_delta as i64 + 1
    }

    pub fn is_transactional(&self) -> bool {
        self.attributes & ATTR_TRANSACTIONAL != 0
    }

    pub fn is_control(&self) -> bool {
        self.attributes & ATTR_CONTROL != 0
    }

    pub fn is_log_append_time(&self) -> bool {
        self.attributes & ATTR_LOG_APPEND_TIME != 0
    }

    pub fn compression_codec(&self) -> i16 {
        self.attributes & ATTR_COMPRESSION_MASK
    }
}

/// Splits a produce payload (one or more concatenated batches) into validated batches.
pub fn validate_batches(buf: &[u8]) -> Result<Vec<BatchHeader>, WalError> {
    let mut headers = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let header = BatchHeader::parse_validated(&buf[pos..])?;
        pos += header.size_bytes;
        headers.push(header);
    }
    if headers.is_empty() {
        return Err(WalError::BatchTooShort(0));
    }
    Ok(headers)
}

/// Computes the CRC-32C of a whole batch whose covered bytes changed and writes it in.
pub(crate) fn reseal(batch: &mut [u8]) -> u32 {
    let crc = crc32c::crc32c(&batch[CRC_COVERAGE_START..]);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
    crc
}

/// Writes the broker-assigned base offset into a batch (not covered by the CRC).
pub fn patch_base_offset(batch: &mut [u8], base_offset: i64) {
    batch[0..8].copy_from_slice(&base_offset.to_be_bytes());
}

/// Sets each batch's max timestamp to `maxes[i]` where it differs, recomputing its CRC.
pub fn set_max_timestamps(buf: &mut [u8], headers: &mut [BatchHeader], maxes: &[i64]) {
    let mut pos = 0;
    for (header, max) in headers.iter_mut().zip(maxes) {
        let batch = &mut buf[pos..pos + header.size_bytes];
        if header.max_timestamp != *max {
            header.max_timestamp = *max;
            batch[35..43].copy_from_slice(&max.to_be_bytes());
            header.crc = reseal(batch);
        }
        pos += header.size_bytes;
    }
}

/// Marks every batch of a validated produce payload as LogAppendTime with `now_ms` as its max
/// timestamp, as Kafka does; consumers then read `now_ms` as every record's timestamp.
pub fn stamp_log_append_time(buf: &mut [u8], headers: &mut [BatchHeader], now_ms: i64) {
    let mut pos = 0;
    for header in headers {
        let batch = &mut buf[pos..pos + header.size_bytes];
        header.attributes |= ATTR_LOG_APPEND_TIME;
        header.max_timestamp = now_ms;
        batch[21..23].copy_from_slice(&header.attributes.to_be_bytes());
        batch[35..43].copy_from_slice(&now_ms.to_be_bytes());
        header.crc = reseal(batch);
        pos += header.size_bytes;
    }
}

fn i32_at(buf: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(buf[at..at + 4].try_into().expect("4 bytes"))
}

fn i64_at(buf: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(buf[at..at + 8].try_into().expect("8 bytes"))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Builds a minimal valid batch with `records` empty records (body bytes are opaque here).
    pub fn sample_batch(records: i32, body: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&0i64.to_be_bytes());
        let batch_length = (BATCH_HEADER_BYTES - LOG_OVERHEAD_BYTES + body.len()) as i32;
        b.extend_from_slice(&batch_length.to_be_bytes());
        b.extend_from_slice(&(-1i32).to_be_bytes());
        b.push(2);
        b.extend_from_slice(&[0; 4]);
        b.extend_from_slice(&0i16.to_be_bytes());
        b.extend_from_slice(&(records - 1).to_be_bytes());
        b.extend_from_slice(&1000i64.to_be_bytes());
        b.extend_from_slice(&2000i64.to_be_bytes());
        b.extend_from_slice(&(-1i64).to_be_bytes());
        b.extend_from_slice(&(-1i16).to_be_bytes());
        b.extend_from_slice(&(-1i32).to_be_bytes());
        b.extend_from_slice(&records.to_be_bytes());
        b.extend_from_slice(body);
        reseal(&mut b);
        b
    }

    #[test]
    fn parses_and_validates_a_batch() {
        let batch = sample_batch(3, b"abc");
        let h = BatchHeader::parse_validated(&batch).unwrap();
        assert_eq!(h.size_bytes, batch.len());
        assert_eq!(h.offset_count(), 3);
        assert_eq!(h.max_timestamp, 2000);
        assert!(!h.is_transactional());
    }

    #[test]
    fn detects_a_flipped_bit() {
        let mut batch = sample_batch(1, b"payload");
        let last = batch.len() - 1;
        batch[last] ^= 1;
        assert!(matches!(
            BatchHeader::parse_validated(&batch),
            Err(WalError::CrcMismatch { .. })
        ));
    }

    #[test]
    fn rejects_old_magic_and_truncation() {
        let mut batch = sample_batch(1, b"x");
        batch[16] = 1;
        assert!(matches!(
            BatchHeader::parse(&batch),
            Err(WalError::UnsupportedMagic(1))
        ));
        let batch = sample_batch(1, b"xyz");
        assert!(matches!(
            validate_batches(&batch[..batch.len() - 1]),
            Err(WalError::BatchLengthMismatch { .. })
        ));
        assert!(validate_batches(&batch[..10]).is_err());
    }

    #[test]
    fn a_log_append_time_stamp_keeps_the_batches_valid() {
        let mut two = sample_batch(2, b"a");
        two.extend(sample_batch(1, b"bb"));
        let mut headers = validate_batches(&two).unwrap();
        stamp_log_append_time(&mut two, &mut headers, 777);
        let stamped = validate_batches(&two).unwrap();
        assert_eq!(stamped, headers);
        assert!(stamped.iter().all(|h| h.max_timestamp == 777
            && h.attributes & ATTR_LOG_APPEND_TIME != 0
            && h.base_timestamp == 1000));
    }

    #[test]
    fn splits_concatenated_batches() {
        let mut two = sample_batch(2, b"a");
        two.extend(sample_batch(5, b"bb"));
        let headers = validate_batches(&two).unwrap();
        assert_eq!(headers.len(), 2);
        assert_eq!(headers[1].record_count, 5);
    }

    #[test]
    fn patching_the_base_offset_keeps_the_crc_valid() {
        let mut batch = sample_batch(1, b"z");
        patch_base_offset(&mut batch, 42);
        let h = BatchHeader::parse_validated(&batch).unwrap();
        assert_eq!(h.base_offset, 42);
    }

    #[test]
    fn garbage_never_panics() {
        for len in 0..80 {
            let junk: Vec<u8> = (0..len).map(|i| (i * 37 % 251) as u8).collect();
            let _ = validate_batches(&junk);
        }
        let mut negative = sample_batch(1, b"");
        negative[8..12].copy_from_slice(&(-50i32).to_be_bytes());
        assert!(BatchHeader::parse(&negative).is_err());
    }
}
