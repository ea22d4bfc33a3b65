//! The KIP-1164 Diskless* coordinator APIs (keys 1093-1100: the seed's 93-100 plus 1000, as
//! Kafka 4.4 took 93 and 94), generated from `schemas/*.json`.

use kafka_protocol::protocol::buf::{ByteBuf, ByteBufMut};
use kafka_protocol::protocol::{
    Decodable, Encodable, HeaderVersion, Message, Request, VersionRange,
};
use uuid::Uuid;

use crate::wire;

#[cfg(test)]
use crate::sample::Sample;

include!(concat!(env!("OUT_DIR"), "/diskless_messages.rs"));

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::round_trip;

    #[test]
    fn every_message_round_trips_and_refuses_truncation() {
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
}
