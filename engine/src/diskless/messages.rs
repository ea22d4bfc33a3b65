//! Generated from `engine/schemas/*.json` by `engine/build.rs`.

use bytes::{Bytes, BytesMut};
use uuid::Uuid;

use super::wire::{self, WireDecode, WireEncode, WireError};

#[cfg(test)]
use super::wire::Sample;

include!(concat!(env!("OUT_DIR"), "/diskless_messages.rs"));

/// API keys of the Diskless* requests, with the version range served (only version 0 exists).
pub const API_KEYS: &[i16] = &[
    DisklessCreatePartitionsRequest::API_KEY,
    DisklessDeleteTopicsRequest::API_KEY,
    DisklessCommitFileRequest::API_KEY,
    DisklessDeleteRecordsRequest::API_KEY,
    DisklessListOffsetsRequest::API_KEY,
    DisklessFindBatchesRequest::API_KEY,
    DisklessDescribeFilesRequest::API_KEY,
];

#[cfg(test)]
mod tests {
    use bytes::BytesMut;

    use super::*;
    use crate::diskless::wire::round_trip;

    #[test]
    fn every_message_round_trips() {
        round_trip::<DisklessCreatePartitionsRequest>();
        round_trip::<DisklessCreatePartitionsResponse>();
        round_trip::<DisklessDeleteTopicsRequest>();
        round_trip::<DisklessDeleteTopicsResponse>();
        round_trip::<DisklessCommitFileRequest>();
        round_trip::<DisklessCommitFileResponse>();
        round_trip::<DisklessDeleteRecordsRequest>();
        round_trip::<DisklessDeleteRecordsResponse>();
        round_trip::<DisklessListOffsetsRequest>();
        round_trip::<DisklessListOffsetsResponse>();
        round_trip::<DisklessFindBatchesRequest>();
        round_trip::<DisklessFindBatchesResponse>();
        round_trip::<DisklessDescribeFilesRequest>();
        round_trip::<DisklessDescribeFilesResponse>();
    }

    #[test]
    fn encoding_follows_the_flexible_wire_format() {
        let request = DisklessDescribeFilesRequest {
            files: vec![DisklessDescribeFileEntry {
                object_key: "ab".into(),
            }],
            timeout_ms: 7,
        };
        let mut buf = BytesMut::new();
        request.encode(&mut buf);
        // compact array of 1 (2), compact string "ab" (3, 'a', 'b'), no tags (0),
        // int32 timeout, no tags (0).
        assert_eq!(&buf[..], &[2, 3, b'a', b'b', 0, 0, 0, 0, 7, 0]);
        assert_eq!(DisklessDescribeFilesRequest::default().timeout_ms, 60_000);
    }
}
