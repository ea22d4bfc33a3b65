//! The coordinator's metadata records: KIP-1164's `DisklessPartitionCreatedRecord` (100),
//! `DisklessTopicDeletedRecord` (101), `DisklessFileCommittedRecord` (102) and
//! `DisklessRecordsDeletedRecord` (103) from the seed, and Shoal's own (200 on), all generated
//! from `schemas/records/*.json` like the wire messages.
//!
//! A group of records that must apply together is written as one entry:
//! `[time i64]` then, per record, `[type i16][version i16][body length u32][body]`, the body in
//! the record's flexible encoding. The time is the coordinator's clock when it wrote the entry;
//! records that need a time (a deletion, a commit) take it from there.

use bytes::{Buf, BufMut};
use kafka_protocol::protocol::buf::{ByteBuf, ByteBufMut};
use kafka_protocol::protocol::{Decodable, Encodable};
use uuid::Uuid;

use crate::wire;

#[cfg(test)]
use crate::sample::Sample;

/// A record type and the version of it this build writes (and the only one it reads).
pub trait MetadataRecord {
    const TYPE: i16;
    const VERSION: i16 = 0;
}

include!(concat!(env!("OUT_DIR"), "/metadata_records.rs"));

const RECORD_HEADER_BYTES: usize = 2 + 2 + 4;

/// Appends one entry of `records`, written at `time_ms`, to `out`.
pub fn encode_entry(time_ms: i64, records: &[AnyRecord], out: &mut Vec<u8>) -> anyhow::Result<()> {
    out.put_i64(time_ms);
    for record in records {
        out.put_i16(record.record_type());
        out.put_i16(0);
        let len_at = out.len();
        out.put_u32(0);
        record.encode_body(out)?;
        let len = out.len() - len_at - 4;
        out[len_at..len_at + 4].copy_from_slice(&(len as u32).to_be_bytes());
    }
    Ok(())
}

/// Decodes one entry: its time and its records. Every length is checked against the bytes
/// left, each body must be consumed exactly, and an unknown type or version is an error.
pub fn decode_entry(mut entry: &[u8]) -> anyhow::Result<(i64, Vec<AnyRecord>)> {
    if entry.len() < 8 {
        anyhow::bail!("an entry of {} bytes has no time", entry.len());
    }
    let time_ms = entry.get_i64();
    let mut records = Vec::new();
    while !entry.is_empty() {
        if entry.len() < RECORD_HEADER_BYTES {
            anyhow::bail!("{} bytes left are no record header", entry.len());
        }
        let record_type = entry.get_i16();
        let version = entry.get_i16();
        let len = entry.get_u32() as usize;
        if len > entry.len() {
            anyhow::bail!("a record of {len} bytes with {} left", entry.len());
        }
        let (mut body, rest) = entry.split_at(len);
        let record = AnyRecord::decode_body(record_type, version, &mut body)?;
        if !body.is_empty() {
            anyhow::bail!(
                "record type {record_type} left {} bytes undecoded",
                body.len()
            );
        }
        records.push(record);
        entry = rest;
    }
    Ok((time_ms, records))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::round_trip;

    #[test]
    fn every_record_round_trips_and_refuses_truncation() {
        round_trip::<DisklessPartitionCreatedRecord>();
        round_trip::<DisklessTopicDeletedRecord>();
        round_trip::<DisklessFileCommittedRecord>();
        round_trip::<DisklessRecordsDeletedRecord>();
        round_trip::<ShoalPartitionStateRecord>();
        round_trip::<ShoalMirrorPartitionsChangedRecord>();
        round_trip::<ShoalConsumerMemberRecord>();
    }

    /// A record's tagged fields are written only when set, so one without them is encoded as
    /// before they existed, and entries written before read as the default; tags a newer
    /// writer added are skipped.
    #[test]
    fn tagged_fields_are_optional_both_ways() {
        let plain = ShoalConsumerMemberRecord {
            member_id: "m".into(),
            ..Default::default()
        };
        let mut before = bytes::BytesMut::new();
        plain.encode(&mut before, 0).unwrap();
        assert_eq!(before.last(), Some(&0), "no tagged fields");
        let classic = ShoalConsumerMemberRecord {
            classic_protocols: vec![ShoalClassicProtocol {
                name: "range".into(),
                metadata: vec![0, 1],
            }],
            classic_session_timeout_ms: 10_000,
            ..plain.clone()
        };
        let mut with_tags = bytes::BytesMut::new();
        classic.encode(&mut with_tags, 0).unwrap();
        assert_eq!(with_tags[..before.len() - 1], before[..before.len() - 1]);
        let decoded = ShoalConsumerMemberRecord::decode(&mut with_tags.clone().freeze(), 0);
        assert_eq!(decoded.unwrap(), classic);
        // An unknown tag 9 of two bytes after the known ones: skipped.
        let mut newer = before.to_vec();
        newer.pop();
        newer.extend_from_slice(&[1, 9, 2, 0xab, 0xcd]);
        let decoded = ShoalConsumerMemberRecord::decode(&mut bytes::Bytes::from(newer), 0);
        assert_eq!(decoded.unwrap(), plain);
        // A known tag whose value is shorter than its stated size is refused.
        let mut padded = before.to_vec();
        padded.pop();
        padded.extend_from_slice(&[1, 1, 5, 0, 0, 0, 1, 0]);
        assert!(ShoalConsumerMemberRecord::decode(&mut bytes::Bytes::from(padded), 0).is_err());
    }

    #[test]
    fn an_entry_of_every_record_round_trips() {
        let records = every_record_sample(3);
        let mut entry = Vec::new();
        encode_entry(1234, &records, &mut entry).unwrap();
        let (time, decoded) = decode_entry(&entry).unwrap();
        assert_eq!(time, 1234);
        assert_eq!(decoded, records);
        for cut in 8..entry.len() {
            let _ = decode_entry(&entry[..cut]); // never a panic
        }
    }

    #[test]
    fn seed_record_types_are_the_kips() {
        assert_eq!(DisklessPartitionCreatedRecord::TYPE, 100);
        assert_eq!(DisklessTopicDeletedRecord::TYPE, 101);
        assert_eq!(DisklessFileCommittedRecord::TYPE, 102);
        assert_eq!(DisklessRecordsDeletedRecord::TYPE, 103);
    }

    #[test]
    fn an_unknown_type_or_version_is_refused() {
        let mut entry = Vec::new();
        let record = AnyRecord::from(DisklessTopicDeletedRecord::sample(1));
        encode_entry(0, &[record], &mut entry).unwrap();
        let mut newer = entry.clone();
        newer[8 + 3] = 1; // version 1
        assert!(decode_entry(&newer).is_err());
        let mut unknown = entry;
        unknown[8 + 1] = 99; // type 99
        assert!(decode_entry(&unknown).is_err());
    }
}
