//! The WAL object reader: a range of object bytes read back as batches of given sizes, as a
//! Fetch does with the coordinator's coordinates. Input: a count, sizes (u16 each), bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shoal_wal::object::read_batches;

fuzz_target!(|data: &[u8]| {
    let Some((&count, rest)) = data.split_first() else {
        return;
    };
    let count = (count % 8) as usize;
    if rest.len() < count * 2 {
        return;
    }
    let (sizes, range) = rest.split_at(count * 2);
    let sizes: Vec<usize> = sizes
        .chunks(2)
        .map(|s| u16::from_be_bytes([s[0], s[1]]) as usize)
        .collect();
    for verify in [false, true] {
        if let Ok(headers) = read_batches(range, sizes.iter().copied(), verify) {
            assert_eq!(headers.len(), sizes.len());
            for (header, size) in headers.iter().zip(&sizes) {
                assert_eq!(header.size_bytes, *size);
            }
        }
    }
});
