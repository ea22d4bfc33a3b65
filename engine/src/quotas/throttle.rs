//! How a throttle reaches the client: the answer's `ThrottleTimeMs`, and, for versions older
//! than KIP-219 (whose clients do not wait by themselves), a delayed answer.

use kafka_protocol::protocol::Request;
use shoal_protocol::diskless::*;
use shoal_protocol::messages::*;
use shoal_protocol::mirror::*;

/// An answer that can carry a throttle time.
pub trait ThrottleTime {
    /// Its `ThrottleTimeMs`; None for the few answers without one.
    fn throttle_time_ms(&mut self) -> Option<&mut i32>;
}

macro_rules! with_throttle_field {
    ($($response:ty),* $(,)?) => {$(
        impl ThrottleTime for $response {
            fn throttle_time_ms(&mut self) -> Option<&mut i32> {
                Some(&mut self.throttle_time_ms)
            }
        }
    )*};
}

with_throttle_field!(
    ProduceResponse,
    FetchResponse,
    ListOffsetsResponse,
    MetadataResponse,
    ApiVersionsResponse,
    CreateTopicsResponse,
    DeleteTopicsResponse,
    DeleteRecordsResponse,
    InitProducerIdResponse,
    CreatePartitionsResponse,
    DescribeClusterResponse,
    DescribeTopicPartitionsResponse,
    DescribeLogDirsResponse,
    FindCoordinatorResponse,
    OffsetForLeaderEpochResponse,
    DescribeProducersResponse,
    AddPartitionsToTxnResponse,
    AddOffsetsToTxnResponse,
    EndTxnResponse,
    TxnOffsetCommitResponse,
    DescribeTransactionsResponse,
    ListTransactionsResponse,
    DescribeConfigsResponse,
    ListConfigResourcesResponse,
    UpdateFeaturesResponse,
    CreateDelegationTokenResponse,
    RenewDelegationTokenResponse,
    ExpireDelegationTokenResponse,
    DescribeDelegationTokenResponse,
    AlterConfigsResponse,
    IncrementalAlterConfigsResponse,
    JoinGroupResponse,
    SyncGroupResponse,
    HeartbeatResponse,
    LeaveGroupResponse,
    ConsumerGroupHeartbeatResponse,
    ShareGroupHeartbeatResponse,
    ShareGroupDescribeResponse,
    StreamsGroupHeartbeatResponse,
    StreamsGroupDescribeResponse,
    ShareFetchResponse,
    ShareAcknowledgeResponse,
    DescribeShareGroupOffsetsResponse,
    AlterShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
    ListGroupsResponse,
    ConsumerGroupDescribeResponse,
    DescribeGroupsResponse,
    DeleteGroupsResponse,
    OffsetDeleteResponse,
    DescribeAclsResponse,
    CreateAclsResponse,
    DeleteAclsResponse,
    DescribeUserScramCredentialsResponse,
    AlterUserScramCredentialsResponse,
    DescribeClientQuotasResponse,
    AlterClientQuotasResponse,
    DisklessCreatePartitionsResponse,
    DisklessDeleteTopicsResponse,
    DisklessCommitFileResponse,
    DisklessDeleteRecordsResponse,
    DisklessListOffsetsResponse,
    DisklessFindBatchesResponse,
    DisklessDescribeFilesResponse,
    CreateMirrorResponse,
    AddTopicsToMirrorResponse,
    RemoveTopicsFromMirrorResponse,
    LastMirroredOffsetsResponse,
    ListMirrorsResponse,
    DescribeMirrorsResponse,
    ReadMirrorStatesResponse,
    WriteMirrorStatesResponse,
    PauseMirrorTopicsResponse,
    ResumeMirrorTopicsResponse,
);

/// The SASL exchange's answers have no throttle time (nor is it throttled).
impl ThrottleTime for SaslHandshakeResponse {
    fn throttle_time_ms(&mut self) -> Option<&mut i32> {
        None
    }
}

impl ThrottleTime for SaslAuthenticateResponse {
    fn throttle_time_ms(&mut self) -> Option<&mut i32> {
        None
    }
}

/// WriteTxnMarkers has none: Kafka's brokers send it each other, unthrottled.
impl ThrottleTime for WriteTxnMarkersResponse {
    fn throttle_time_ms(&mut self) -> Option<&mut i32> {
        None
    }
}

/// Whether a client sending `version` of `api_key` waits out a throttle time by itself
/// (KIP-219, Kafka 2.0, which raised these APIs' versions); an older one's answer is held
/// back for the throttle time instead, as Kafka does. APIs younger than KIP-219 always do.
pub fn client_waits_by_itself(api_key: i16, version: i16) -> bool {
    let first = match api_key {
        k if k == ProduceRequest::KEY => 6,
        k if k == FetchRequest::KEY => 8,
        k if k == ListOffsetsRequest::KEY => 3,
        k if k == MetadataRequest::KEY => 6,
        k if k == OffsetCommitRequest::KEY => 4,
        k if k == OffsetFetchRequest::KEY => 4,
        k if k == FindCoordinatorRequest::KEY => 2,
        k if k == JoinGroupRequest::KEY => 3,
        k if k == HeartbeatRequest::KEY => 2,
        k if k == LeaveGroupRequest::KEY => 2,
        k if k == SyncGroupRequest::KEY => 2,
        k if k == DescribeGroupsRequest::KEY => 2,
        k if k == ListGroupsRequest::KEY => 2,
        k if k == ApiVersionsRequest::KEY => 2,
        k if k == CreateTopicsRequest::KEY => 3,
        k if k == DeleteTopicsRequest::KEY => 2,
        k if k == DescribeConfigsRequest::KEY => 2,
        k if k == DeleteRecordsRequest::KEY
            || k == InitProducerIdRequest::KEY
            || k == AddPartitionsToTxnRequest::KEY
            || k == AddOffsetsToTxnRequest::KEY
            || k == EndTxnRequest::KEY
            || k == TxnOffsetCommitRequest::KEY
            || k == DescribeAclsRequest::KEY
            || k == CreateAclsRequest::KEY
            || k == DeleteAclsRequest::KEY
            || k == AlterConfigsRequest::KEY
            || k == CreatePartitionsRequest::KEY
            || k == DeleteGroupsRequest::KEY =>
        {
            1
        }
        _ => 0,
    };
    version >= first
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_produce_and_fetch_versions_are_answered_late() {
        assert!(!client_waits_by_itself(ProduceRequest::KEY, 5));
        assert!(client_waits_by_itself(ProduceRequest::KEY, 6));
        assert!(!client_waits_by_itself(FetchRequest::KEY, 7));
        assert!(client_waits_by_itself(FetchRequest::KEY, 8));
        assert!(client_waits_by_itself(AlterClientQuotasRequest::KEY, 0));
    }

    #[test]
    fn answers_expose_their_throttle_time() {
        let mut response = ProduceResponse::default();
        *response.throttle_time_ms().unwrap() = 30;
        assert_eq!(response.throttle_time_ms, 30);
        assert!(SaslAuthenticateResponse::default()
            .throttle_time_ms()
            .is_none());
    }
}
