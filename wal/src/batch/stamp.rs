//! The header fields the broker (and the bench) rewrite inside the CRC's coverage: the
//! timestamp type and timestamps, then the CRC again.

use super::header::BatchHeader;
use super::layout::*;

/// Sets each batch's max timestamp to `maxes[i]` where it differs, recomputing its CRC.
pub fn set_max_timestamps(buf: &mut [u8], headers: &mut [BatchHeader], maxes: &[i64]) {
    let mut pos = 0;
    for (header, max) in headers.iter_mut().zip(maxes) {
        let batch = &mut buf[pos..pos + header.size_bytes];
        if header.max_timestamp != *max {
            header.max_timestamp = *max;
            put_i64(batch, MAX_TIMESTAMP_AT, *max);
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
        put_i16(batch, ATTRIBUTES_AT, header.attributes);
        put_i64(batch, MAX_TIMESTAMP_AT, now_ms);
        header.crc = reseal(batch);
        pos += header.size_bytes;
    }
}

/// Gives one whole batch whose record timestamp deltas are all 0 the CreateTime `now_ms` (the
/// bench stamps each send this way, so records carry their send time).
pub fn stamp_create_time(batch: &mut [u8], now_ms: i64) {
    put_i64(batch, BASE_TIMESTAMP_AT, now_ms);
    put_i64(batch, MAX_TIMESTAMP_AT, now_ms);
    reseal(batch);
}
