//! The KIP-1279 mirror APIs, generated from `schemas/mirror/*.json`. Each message lives in its
//! own module (their nested types share names); the message types are re-exported here. The
//! API keys (1000-1009) are Shoal's choice: the KIP leaves them open, and the prototype's
//! 94-103 collide with Kafka 4.4's own keys and the KIP-1164 seed's Diskless* keys.

use kafka_protocol::protocol::buf::{ByteBuf, ByteBufMut};
use kafka_protocol::protocol::{
    Decodable, Encodable, HeaderVersion, Message, Request, VersionRange,
};
use uuid::Uuid;

use crate::wire;

#[cfg(test)]
use crate::sample::Sample;

include!(concat!(env!("OUT_DIR"), "/mirror_messages.rs"));

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::round_trip;

    #[test]
    fn every_mirror_message_round_trips_and_refuses_truncation() {
        round_trip::<CreateMirrorRequest>();
        round_trip::<CreateMirrorResponse>();
        round_trip::<AddTopicsToMirrorRequest>();
        round_trip::<AddTopicsToMirrorResponse>();
        round_trip::<RemoveTopicsFromMirrorRequest>();
        round_trip::<RemoveTopicsFromMirrorResponse>();
        round_trip::<LastMirroredOffsetsRequest>();
        round_trip::<LastMirroredOffsetsResponse>();
        round_trip::<ListMirrorsRequest>();
        round_trip::<ListMirrorsResponse>();
        round_trip::<DescribeMirrorsRequest>();
        round_trip::<DescribeMirrorsResponse>();
        round_trip::<ReadMirrorStatesRequest>();
        round_trip::<ReadMirrorStatesResponse>();
        round_trip::<WriteMirrorStatesRequest>();
        round_trip::<WriteMirrorStatesResponse>();
        round_trip::<PauseMirrorTopicsRequest>();
        round_trip::<PauseMirrorTopicsResponse>();
        round_trip::<ResumeMirrorTopicsRequest>();
        round_trip::<ResumeMirrorTopicsResponse>();
    }
}
