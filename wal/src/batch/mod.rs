//! Kafka v2 record batches: where each header field lives (`layout`, the only place that
//! knows), parsing and validating headers, building batches, and the fields the broker
//! rewrites: the base offset (outside the CRC) and, for LogAppendTime topics and producers
//! that leave it unset, the max timestamp (inside it, so the CRC is resealed).

mod builder;
mod header;
pub(crate) mod layout;
mod stamp;

pub(crate) use builder::set_batch_length;
pub use builder::{encode_record, BatchBuilder, RecordHeader};
pub use header::{validate_batches, BatchHeader};
pub use layout::{patch_base_offset, reseal, BATCH_HEADER_BYTES, LOG_OVERHEAD_BYTES, MAGIC_V2};
pub use stamp::{set_max_timestamps, stamp_create_time, stamp_log_append_time};

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::decompress::Codec;

    /// A valid uncompressed batch claiming `records` records whose encoded bytes are `body`
    /// (opaque to header tests), base timestamp 1000, max timestamp 2000.
    pub fn sample_batch(records: i32, body: &[u8]) -> Vec<u8> {
        BatchBuilder::new(1000)
            .raw_records(records, body)
            .max_timestamp(2000)
            .build(Codec::None)
            .expect("an uncompressed batch")
    }
}
