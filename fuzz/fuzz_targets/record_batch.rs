//! Record-batch validation and decompression, as produce and ListOffsets read batches: the
//! batches are split and CRC-checked, then each one's records read (inflated within a cap),
//! recompressed as a topic with another `compression.type` would have them, and read with
//! their keys and rebuilt with some of them as compaction does; and a Fetch answer's records
//! walked as a read_committed reader (the CLI, the Iceberg table writer) walks them.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shoal_wal::batch::validate_batches;
use shoal_wal::committed::walk_committed;
use shoal_wal::decompress::Codec;
use shoal_wal::recompress::recompress_batch;
use shoal_wal::compaction::rebuild_batch;
use shoal_wal::records::{
    check_and_inflate_records, check_records, check_records_noting_heads,
    first_record_at_or_after, inflate_payload, keyed_records, latest_record, KeyedRecord,
};
use shoal_wal::BatchHeader;

const INFLATED_MAX: usize = 1 << 20;

fuzz_target!(|data: &[u8]| {
    // Unchecked CRCs too, so the fuzzer reaches the records: a stored batch is read whole.
    let mut at = 0;
    while let Ok(header) = BatchHeader::parse(&data[at..]) {
        let batch = &data[at..at + header.size_bytes];
        let checked = check_records(batch, &header, INFLATED_MAX);
        // Noting the fields' heads changes no verdict (the schema check's single pass).
        let mut heads = Vec::new();
        let noted = check_records_noting_heads(batch, &header, INFLATED_MAX, &mut heads);
        assert_eq!(checked.is_ok(), noted.is_ok(), "the same verdict with heads noted");
        if let (Ok(summary), Ok(_)) = (&checked, &noted) {
            assert_eq!(heads.len(), summary.count as usize);
        }
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
        compact(batch, &header);
        at += header.size_bytes;
    }
    let _ = validate_batches(data);
    // A read_committed walk over the same bytes: its position never moves back.
    let aborted = vec![(0, 0), (1, 5)];
    let walked = walk_committed(data, 3, aborted, |batch, header| {
        let _ = inflate_payload(batch, header, INFLATED_MAX);
        Ok(None)
    });
    if let Ok(next) = walked {
        assert!(next >= 3, "the position never moves back");
    }
});

/// Compaction's reading of a stored batch: every other record kept, the rebuilt batch whole
/// and holding exactly those.
fn compact(batch: &[u8], header: &BatchHeader) {
    let Ok(inflated) = inflate_payload(batch, header, INFLATED_MAX) else {
        return;
    };
    let Ok(records) = keyed_records(&inflated, header) else {
        return;
    };
    let kept: Vec<KeyedRecord<'_>> = records.iter().step_by(2).cloned().collect();
    let Ok(Some(rebuilt)) = rebuild_batch(batch, header, &kept, 7) else {
        return;
    };
    let h = BatchHeader::parse_validated(&rebuilt).expect("a rebuilt batch is whole");
    assert_eq!((h.base_offset, h.last_offset_delta), (7, header.last_offset_delta));
    let inflated = inflate_payload(&rebuilt, &h, INFLATED_MAX).expect("it inflates");
    let again = keyed_records(&inflated, &h).expect("its records read back");
    let fields = |r: &KeyedRecord<'_>| {
        let owned = |b: Option<&[u8]>| b.map(<[u8]>::to_vec);
        let headers: Vec<_> = r.headers.iter().map(|(k, v)| (k.to_vec(), owned(*v))).collect();
        (r.offset_delta, r.timestamp_delta, owned(r.key), owned(r.value), headers)
    };
    let again: Vec<_> = again.iter().map(fields).collect();
    assert_eq!(again, kept.iter().map(fields).collect::<Vec<_>>());
}
