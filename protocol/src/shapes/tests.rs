//! The shapes are the decoders, byte for byte: random valid requests of every version of every
//! Kafka API's shape are accepted whole, and the generated codecs (`crate::messages`) decode
//! them and encode them back to the same bytes. kafka-protocol, an independent implementation
//! of the same specifications, does too for the versions it has. Counts beyond the bytes left
//! are refused.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, Request};

use super::*;

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn put_uvarint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A random request of `shape` at `version`: every array has 0-2 elements, strings are short
/// ASCII, nothing is null, no tagged fields.
fn generate(shape: &Shape, version: i16, rng: &mut Rng, out: &mut Vec<u8>) {
    for field in shape.fields {
        if within(field.versions, version) {
            generate_value(&field.ty, version, rng, out);
        }
    }
    if version >= shape.flexible_from {
        put_uvarint(out, 0);
    }
}

fn generate_value(ty: &Ty, version: i16, rng: &mut Rng, out: &mut Vec<u8>) {
    let text = |rng: &mut Rng| -> Vec<u8> {
        (0..rng.below(4))
            .map(|_| b'a' + rng.below(26) as u8)
            .collect()
    };
    match ty {
        Ty::Fixed(n) => out.extend((0..*n).map(|_| rng.next() as u8)),
        Ty::Bool => out.push(rng.below(2) as u8),
        Ty::String | Ty::Bytes => {
            let value = text(rng);
            if matches!(ty, Ty::String) {
                out.extend_from_slice(&(value.len() as i16).to_be_bytes());
            } else {
                out.extend_from_slice(&(value.len() as i32).to_be_bytes());
            }
            out.extend_from_slice(&value);
        }
        Ty::CompactString | Ty::CompactBytes => {
            let value = text(rng);
            put_uvarint(out, value.len() as u32 + 1);
            out.extend_from_slice(&value);
        }
        Ty::Array {
            compact, element, ..
        } => {
            let count = rng.below(3) as u32;
            if *compact {
                put_uvarint(out, count + 1);
            } else {
                out.extend_from_slice(&(count as i32).to_be_bytes());
            }
            for _ in 0..count {
                generate_value(element, version, rng, out);
            }
        }
        Ty::Struct(nested) => generate(nested, version, rng, out),
        Ty::OptionStruct(nested) => {
            if rng.below(2) == 0 {
                out.push(0xff);
            } else {
                out.push(1);
                generate(nested, version, rng, out);
            }
        }
    }
}

/// Every version of every Kafka API's request: random requests pass the shape whole, and the
/// generated codec reads them, computes their size and writes the same bytes back.
#[test]
fn every_request_shape_matches_the_generated_codec() {
    use crate::messages::{reencode, ApiKey};

    for key in ApiKey::iter() {
        let shape = request_shape(key as i16).expect("a shape for every API");
        let range = key.valid_versions();
        assert_eq!(shape.versions, (range.min, range.max), "{}", shape.name);
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ key as u64);
        for version in range.min..=range.max {
            for _ in 0..40 {
                let mut bytes = Vec::new();
                generate(shape, version, &mut rng, &mut bytes);
                check(shape, version, &bytes)
                    .unwrap_or_else(|e| panic!("{} v{version}: {e}", shape.name));
                let again = reencode(key, false, version, &mut Bytes::from(bytes.clone()))
                    .unwrap_or_else(|e| panic!("{} v{version}: {e:#}", shape.name));
                assert_eq!(&again[..], &bytes[..], "{} v{version}", shape.name);
                // Cut short anywhere, it is refused.
                if !bytes.is_empty() {
                    let cut = rng.below(bytes.len() as u64) as usize;
                    assert!(check(shape, version, &bytes[..cut]).is_err());
                }
            }
        }
    }
}

/// The same random requests, for the versions kafka-protocol (`R`) also has: it reads them
/// and writes the same bytes back, so the generated codecs and an independent implementation
/// of the specifications agree.
fn matches_kafka_protocol<R: Request + Decodable + Encodable>() {
    let shape = request_shape(R::KEY).expect("a shape for every served request");
    let mut rng = Rng(0x5DEE_CE66_D1CE_4E5B ^ R::KEY as u64);
    let first = shape.versions.0.max(R::VERSIONS.min);
    let last = shape.versions.1.min(R::VERSIONS.max);
    for version in first..=last {
        for _ in 0..40 {
            let mut bytes = Vec::new();
            generate(shape, version, &mut rng, &mut bytes);
            let mut reading = Bytes::from(bytes.clone());
            let decoded = R::decode(&mut reading, version)
                .unwrap_or_else(|e| panic!("{} v{version}: kafka-protocol: {e}", shape.name));
            assert!(
                reading.is_empty(),
                "{} v{version}: unread bytes",
                shape.name
            );
            let mut again = BytesMut::new();
            decoded.encode(&mut again, version).unwrap();
            assert_eq!(&again[..], &bytes[..], "{} v{version}", shape.name);
        }
    }
}

#[test]
fn the_generated_codecs_agree_with_kafka_protocol() {
    matches_kafka_protocol::<ProduceRequest>();
    matches_kafka_protocol::<FetchRequest>();
    matches_kafka_protocol::<ListOffsetsRequest>();
    matches_kafka_protocol::<MetadataRequest>();
    matches_kafka_protocol::<ApiVersionsRequest>();
    matches_kafka_protocol::<CreateTopicsRequest>();
    matches_kafka_protocol::<DeleteTopicsRequest>();
    matches_kafka_protocol::<DeleteRecordsRequest>();
    matches_kafka_protocol::<InitProducerIdRequest>();
    matches_kafka_protocol::<CreatePartitionsRequest>();
    matches_kafka_protocol::<DescribeClusterRequest>();
    matches_kafka_protocol::<FindCoordinatorRequest>();
    matches_kafka_protocol::<OffsetForLeaderEpochRequest>();
    matches_kafka_protocol::<DescribeProducersRequest>();
    matches_kafka_protocol::<DescribeConfigsRequest>();
    matches_kafka_protocol::<AlterConfigsRequest>();
    matches_kafka_protocol::<IncrementalAlterConfigsRequest>();
    matches_kafka_protocol::<JoinGroupRequest>();
    matches_kafka_protocol::<SyncGroupRequest>();
    matches_kafka_protocol::<HeartbeatRequest>();
    matches_kafka_protocol::<ConsumerGroupHeartbeatRequest>();
    matches_kafka_protocol::<ConsumerGroupDescribeRequest>();
    matches_kafka_protocol::<LeaveGroupRequest>();
    matches_kafka_protocol::<OffsetCommitRequest>();
    matches_kafka_protocol::<OffsetFetchRequest>();
    matches_kafka_protocol::<ListGroupsRequest>();
    matches_kafka_protocol::<DescribeGroupsRequest>();
    matches_kafka_protocol::<DeleteGroupsRequest>();
    matches_kafka_protocol::<OffsetDeleteRequest>();
    matches_kafka_protocol::<DescribeClientQuotasRequest>();
    matches_kafka_protocol::<AlterClientQuotasRequest>();
    matches_kafka_protocol::<ShareGroupHeartbeatRequest>();
    matches_kafka_protocol::<ShareGroupDescribeRequest>();
    matches_kafka_protocol::<ShareFetchRequest>();
    matches_kafka_protocol::<ShareAcknowledgeRequest>();
    matches_kafka_protocol::<DescribeShareGroupOffsetsRequest>();
    matches_kafka_protocol::<AlterShareGroupOffsetsRequest>();
    matches_kafka_protocol::<DeleteShareGroupOffsetsRequest>();
}

#[test]
fn a_count_beyond_the_bytes_left_is_refused_before_anything_is_decoded() {
    // The 18-byte request that aborted the broker: Metadata v1 claiming 2^31-1 topics.
    let body = [0x7f, 0xff, 0xff, 0xff];
    let shape = request_shape(MetadataRequest::KEY).unwrap();
    assert!(matches!(
        check(shape, 1, &body),
        Err(ShapeError::Overrun {
            claimed: 2147483647,
            ..
        })
    ));
    // The same claim as a compact array (v9+): a varint of 2^31.
    let compact = [0x80, 0x80, 0x80, 0x80, 0x08];
    assert!(check(shape, 12, &compact).is_err());
    // An honest one topic, v1: accepted, and its decoded size counted.
    let honest = [0, 0, 0, 1, 0, 1, b't'];
    let checked = check(shape, 1, &honest).unwrap();
    assert_eq!(
        checked.decoded_bytes,
        std::mem::size_of::<metadata_request::MetadataRequestTopic>()
    );
    // Negative lengths other than null.
    assert!(check(shape, 1, &[0xff, 0xff, 0xff, 0xfe]).is_err());
}

#[test]
fn a_known_tagged_field_must_fill_the_size_it_announces() {
    use crate::messages::FetchRequest;
    use kafka_protocol::protocol::Decodable as _;

    let shape = request_shape(FetchRequest::KEY).unwrap();
    let request = FetchRequest::default().with_cluster_id(Some("c".into()));
    let mut bytes = BytesMut::new();
    Encodable::encode(&request, &mut bytes, 13).unwrap();
    assert!(check(shape, 13, &bytes).is_ok());
    // The top-level tag buffer is the last thing: the cluster id tag is 0, size 2, "c".
    let len = bytes.len();
    assert_eq!(&bytes[len - 5..], &[1, 0, 2, 2, b'c']);
    // Announcing more bytes than the value takes: the walk and the decoder both refuse it.
    let mut lying = bytes.to_vec();
    lying[len - 3] = 3;
    lying.push(0);
    assert!(matches!(
        check(shape, 13, &lying),
        Err(ShapeError::TagSize {
            tag: 0,
            announced: 3,
            used: 2,
            ..
        })
    ));
    assert!(FetchRequest::decode(&mut Bytes::from(lying), 13).is_err());
}

/// What real clients sent (librdkafka and kafka-python, recorded by
/// scripts/capture_fuzz_corpus.py into the fuzzer's seeds) passes the walk and decodes.
#[test]
fn real_client_requests_pass() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/request_decode");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).expect("the recorded seeds") {
        let path = entry.unwrap().path();
        if !path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("seed-")
        {
            continue;
        }
        let seed = std::fs::read(&path).unwrap();
        let api_key = i16::from_be_bytes([seed[0], seed[1]]);
        let version = i16::from_be_bytes([seed[2], seed[3]]);
        check_and_decode(api_key, version, &seed[4..])
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        seen += 1;
    }
    assert!(seen >= 40, "{seen} seeds");
}
