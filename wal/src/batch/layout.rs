//! Where each field of a Kafka v2 record-batch header lives: the one place in Shoal that
//! knows these byte offsets. Readers parse with `BatchHeader`; writers patch through the
//! functions here, and `reseal` the CRC when they touch a covered field.

/// Bytes of the fixed v2 batch header, up to and including the record count.
pub const BATCH_HEADER_BYTES: usize = 61;
/// baseOffset (8) + batchLength (4): the bytes `batchLength` does not count.
pub const LOG_OVERHEAD_BYTES: usize = 12;

pub(crate) const BASE_OFFSET_AT: usize = 0;
pub(crate) const BATCH_LENGTH_AT: usize = 8;
pub(crate) const PARTITION_LEADER_EPOCH_AT: usize = 12;
pub(crate) const MAGIC_AT: usize = 16;
pub(crate) const CRC_AT: usize = 17;
/// The CRC-32C covers everything from the attributes to the end of the batch.
pub(crate) const ATTRIBUTES_AT: usize = 21;
pub(crate) const LAST_OFFSET_DELTA_AT: usize = 23;
pub(crate) const BASE_TIMESTAMP_AT: usize = 27;
pub(crate) const MAX_TIMESTAMP_AT: usize = 35;
pub(crate) const PRODUCER_ID_AT: usize = 43;
pub(crate) const PRODUCER_EPOCH_AT: usize = 51;
pub(crate) const BASE_SEQUENCE_AT: usize = 53;
pub(crate) const RECORD_COUNT_AT: usize = 57;

pub const MAGIC_V2: i8 = 2;

pub(crate) const ATTR_COMPRESSION_MASK: i16 = 0x07;
pub(crate) const ATTR_LOG_APPEND_TIME: i16 = 0x08;
pub(crate) const ATTR_TRANSACTIONAL: i16 = 0x10;
pub(crate) const ATTR_CONTROL: i16 = 0x20;

const _: () = assert!(RECORD_COUNT_AT + 4 == BATCH_HEADER_BYTES);
const _: () = assert!(BATCH_LENGTH_AT + 4 == LOG_OVERHEAD_BYTES);

/// Writes the broker-assigned base offset into a batch (not covered by the CRC).
pub fn patch_base_offset(batch: &mut [u8], base_offset: i64) {
    put_i64(batch, BASE_OFFSET_AT, base_offset);
}

/// Computes the CRC-32C of a whole batch whose covered bytes changed and writes it in.
pub fn reseal(batch: &mut [u8]) -> u32 {
    let crc = crc32c::crc32c(&batch[ATTRIBUTES_AT..]);
    batch[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
    crc
}

pub(crate) fn put_i16(buf: &mut [u8], at: usize, value: i16) {
    buf[at..at + 2].copy_from_slice(&value.to_be_bytes());
}

pub(crate) fn put_i32(buf: &mut [u8], at: usize, value: i32) {
    buf[at..at + 4].copy_from_slice(&value.to_be_bytes());
}

pub(crate) fn put_i64(buf: &mut [u8], at: usize, value: i64) {
    buf[at..at + 8].copy_from_slice(&value.to_be_bytes());
}

pub(crate) fn i16_at(buf: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([buf[at], buf[at + 1]])
}

pub(crate) fn i32_at(buf: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(buf[at..at + 4].try_into().expect("4 bytes"))
}

pub(crate) fn i64_at(buf: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(buf[at..at + 8].try_into().expect("8 bytes"))
}
