//! The coordinator's metadata log and snapshot readers: any bytes as a log file and as a
//! snapshot image are refused or read, never a panic or an unbounded allocation. The input is
//! also sealed with a valid frame and checksum, so the fuzzer reaches the decoders behind them.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shoal_coordinator::frames::scan_frames;
use shoal_coordinator::CoordinatorState;

fuzz_target!(|data: &[u8]| {
    let scan = scan_frames(data);
    assert!(scan.valid_bytes <= data.len());
    if let Some(damage) = &scan.damage {
        assert_eq!(damage.offset, scan.valid_bytes);
        assert!(damage.next_valid_frame.map_or(true, |at| at > damage.offset));
    }
    // The same bytes as one frame's payload, its length and CRC-32C right.
    let mut framed = Vec::with_capacity(data.len() + 8);
    framed.extend_from_slice(&(data.len() as u32).to_be_bytes());
    framed.extend_from_slice(&crc32c(data).to_be_bytes());
    framed.extend_from_slice(data);
    let sealed = scan_frames(&framed).entries;
    let mut state = CoordinatorState::default();
    for entry in scan.entries.iter().chain(&sealed) {
        state.apply(entry);
    }
    let _ = CoordinatorState::decode_snapshot(data);
    let mut image = data.to_vec();
    image.extend_from_slice(&crc32c(data).to_be_bytes());
    let _ = CoordinatorState::decode_snapshot(&image);
});

fn crc32c(data: &[u8]) -> u32 {
    // The Castagnoli polynomial, bit by bit: slow, but no extra dependency for the fuzzer.
    let mut crc = !0u32;
    for byte in data {
        crc ^= *byte as u32;
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0x82F6_3B78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}
