//! Request decoding: any API Shoal serves, at any version, with any body. Input: API key
//! (i16), version (i16), then the body. The walk or the decoder may refuse it; neither may
//! panic, abort or allocate for counts the bytes cannot hold.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let api_key = i16::from_be_bytes([data[0], data[1]]);
    let version = i16::from_be_bytes([data[2], data[3]]);
    let _ = shoal_protocol::shapes::check_and_decode(api_key, version, &data[4..]);
});
