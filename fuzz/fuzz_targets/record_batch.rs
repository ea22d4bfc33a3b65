//! Record-batch validation and decompression, as produce and ListOffsets read batches: the
//! batches are split and CRC-checked, then each one's records read (inflated within a cap),
//! and recompressed as a topic with another `compression.type` would have them.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shoal_wal::batch::validate_batches;
use shoal_wal::decompress::Codec;
use shoal_wal::recompress::recompress_batch;
use shoal_wal::records::{
    check_and_inflate_records, check_records, first_record_at_or_after, latest_record,
};
use shoal_wal::BatchHeader;

const INFLATED_MAX: usize = 1 << 20;

fuzz_target!(|data: &[u8]| {
    // Unchecked CRCs too, so the fuzzer reaches the records: a stored batch is read whole.
    let mut at = 0;
    while let Ok(header) = BatchHeader::parse(&data[at..]) {
        let batch = &data[at..at + header.size_bytes];
        let _ = check_records(batch, &header, INFLATED_MAX);
        let _ = first_record_at_or_after(batch, &header, 0, INFLATED_MAX);
        let _ = latest_record(batch, &header, INFLATED_MAX);
        if let Ok((_, inflated)) = check_and_inflate_records(batch, &header, INFLATED_MAX) {
            let (converted, converted_header) =
                recompress_batch(batch, &header, &inflated, Codec::Lz4).expect("recompresses");
            assert_eq!(
                BatchHeader::parse_validated(&converted).ok(),
                Some(converted_header),
                "a recompressed batch is whole and says so"
            );
        }
        at += header.size_bytes;
    }
    let _ = validate_batches(data);
});
