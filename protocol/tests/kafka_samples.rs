//! Shoal's generated codecs against Kafka's own encoder: every request and response of every
//! broker API, at every version Kafka 4.4 defines, as Kafka's Java message classes write it
//! (`data/kafka-samples.bin`, written by scripts/KafkaMessageSamples.java through
//! scripts/gen_kafka_messages.py), decodes and encodes again to the same bytes, with its size
//! computed exactly; cut short anywhere, it is refused.

use std::collections::BTreeSet;

use bytes::{Buf, Bytes};
use shoal_protocol::messages::{reencode, ApiKey};

struct Sample {
    key: i16,
    response: bool,
    version: i16,
    body: Bytes,
}

fn samples() -> Vec<Sample> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/kafka-samples.bin");
    let mut data = Bytes::from(std::fs::read(path).expect("the samples file"));
    let mut out = Vec::new();
    while data.has_remaining() {
        let key = data.get_i16();
        let kind = data.get_i8();
        let version = data.get_i16();
        let len = data.get_i32() as usize;
        out.push(Sample {
            key,
            response: kind == 1,
            version,
            body: data.split_to(len),
        });
    }
    out
}

#[test]
fn every_sample_from_kafkas_encoder_round_trips_byte_for_byte() {
    let mut failures = Vec::new();
    for s in samples() {
        let key = ApiKey::try_from(s.key).expect("a known API");
        let what = format!(
            "{key:?} {} v{}",
            if s.response { "response" } else { "request" },
            s.version
        );
        match reencode(key, s.response, s.version, &mut s.body.clone()) {
            Ok(again) if again[..] == s.body[..] => {}
            Ok(again) => failures.push(format!(
                "{what}: wrote {} bytes differing from Kafka's {}",
                again.len(),
                s.body.len()
            )),
            Err(e) => failures.push(format!("{what}: {e:#}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_samples_cover_every_api_and_version_both_ways() {
    let seen: BTreeSet<(i16, bool, i16)> = samples()
        .iter()
        .map(|s| (s.key, s.response, s.version))
        .collect();
    for key in ApiKey::iter() {
        let range = key.valid_versions();
        for version in range.min..=range.max {
            for response in [false, true] {
                assert!(
                    seen.contains(&(key as i16, response, version)),
                    "no sample of {key:?} v{version}"
                );
            }
        }
    }
}

#[test]
fn a_sample_cut_short_anywhere_is_refused() {
    for s in samples() {
        let key = ApiKey::try_from(s.key).unwrap();
        for cut in 0..s.body.len() {
            let mut short = s.body.slice(..cut);
            assert!(
                reencode(key, s.response, s.version, &mut short).is_err(),
                "{key:?} v{} cut at {cut} of {}",
                s.version,
                s.body.len()
            );
        }
    }
}

/// Known tagged fields land in their fields, not among the unknown ones kept for re-encoding.
#[test]
fn known_tagged_fields_are_read_into_their_fields() {
    use shoal_protocol::kafka_protocol::protocol::Decodable;
    use shoal_protocol::messages::{ApiVersionsResponse, FetchRequest, FetchResponse};

    let find = |key: ApiKey, response: bool, version: i16| {
        samples()
            .into_iter()
            .find(|s| s.key == key as i16 && s.response == response && s.version == version)
            .expect("sampled")
            .body
    };
    let fetch = FetchResponse::decode(&mut find(ApiKey::Fetch, true, 17), 17).unwrap();
    assert!(fetch.unknown_tagged_fields.is_empty());
    assert!(!fetch.node_endpoints.is_empty());
    let partition = &fetch.responses[0].partitions[0];
    assert!(partition.unknown_tagged_fields.is_empty());
    assert_ne!(partition.current_leader, Default::default());
    let request = FetchRequest::decode(&mut find(ApiKey::Fetch, false, 18), 18).unwrap();
    assert!(request.cluster_id.is_some());
    assert_ne!(request.replica_state, Default::default());
    let versions = ApiVersionsResponse::decode(&mut find(ApiKey::ApiVersions, true, 4), 4).unwrap();
    assert!(!versions.supported_features.is_empty());
    assert!(versions.unknown_tagged_fields.is_empty());
}
