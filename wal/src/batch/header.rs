//! Kafka v2 record-batch headers: parsing and CRC-32C validation of what producers, the store
//! and mirror sources send. Field positions come from `layout`.

use super::layout::*;
use crate::WalError;

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
        let batch_length = i32_at(buf, BATCH_LENGTH_AT);
        let magic = buf[MAGIC_AT] as i8;
        if magic != MAGIC_V2 {
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
            base_offset: i64_at(buf, BASE_OFFSET_AT),
            size_bytes: declared as usize,
            magic,
            crc: i32_at(buf, CRC_AT) as u32,
            attributes: i16_at(buf, ATTRIBUTES_AT),
            last_offset_delta: i32_at(buf, LAST_OFFSET_DELTA_AT),
            base_timestamp: i64_at(buf, BASE_TIMESTAMP_AT),
            max_timestamp: i64_at(buf, MAX_TIMESTAMP_AT),
            producer_id: i64_at(buf, PRODUCER_ID_AT),
            producer_epoch: i16_at(buf, PRODUCER_EPOCH_AT),
            base_sequence: i32_at(buf, BASE_SEQUENCE_AT),
            record_count: i32_at(buf, RECORD_COUNT_AT),
        };
        if header.record_count <= 0 || header.last_offset_delta < 0 {
            return Err(WalError::InvalidRecordCount(header.record_count));
        }
        Ok(header)
    }

    /// Parses the header and checks the CRC-32C over the batch body.
    pub fn parse_validated(buf: &[u8]) -> Result<BatchHeader, WalError> {
        let header = Self::parse(buf)?;
        let computed = crc32c::crc32c(&buf[ATTRIBUTES_AT..header.size_bytes]);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::tests::sample_batch;
    use crate::batch::{patch_base_offset, stamp_log_append_time};

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
        batch[MAGIC_AT] = 1;
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
        put_i32(&mut negative, BATCH_LENGTH_AT, -50);
        assert!(BatchHeader::parse(&negative).is_err());
    }
}
