//! Test fixtures for the generated messages.

use bytes::{Bytes, BytesMut};
use kafka_protocol::protocol::{Decodable, Encodable};

/// A fully populated example of a message.
pub trait Sample {
    fn sample(seed: i64) -> Self;
}

impl Sample for String {
    fn sample(seed: i64) -> Self {
        format!("s{seed}")
    }
}

/// Encodes samples, decodes them back, and checks that the size is computed right and that
/// every cut-short prefix, nothing at all and garbage are refused rather than a panic or a
/// wrong message.
pub fn round_trip<T: Encodable + Decodable + Sample + PartialEq + std::fmt::Debug>() {
    for seed in [0, 1, 7, 1000] {
        let message = T::sample(seed);
        let mut buf = BytesMut::new();
        message.encode(&mut buf, 0).unwrap();
        assert_eq!(message.compute_size(0).unwrap(), buf.len());
        let encoded = buf.freeze();
        let mut reading = encoded.clone();
        assert_eq!(T::decode(&mut reading, 0).unwrap(), message);
        assert!(reading.is_empty(), "decode consumed every byte");
        for cut in 0..encoded.len() {
            let mut prefix = encoded.slice(..cut);
            assert!(
                T::decode(&mut prefix, 0).is_err(),
                "a {cut}-byte prefix decoded"
            );
        }
        assert!(
            T::decode(&mut encoded.clone(), 1).is_err(),
            "only version 0"
        );
    }
    assert!(T::decode(&mut Bytes::new(), 0).is_err());
    assert!(T::decode(&mut Bytes::from_static(&[0xff; 9]), 0).is_err());
}
