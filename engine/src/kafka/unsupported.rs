//! Answers for requests Shoal does not serve (APIs it does not implement, versions outside
//! the advertised ranges): the API's own response carrying an error code, so the client
//! reports a clear error instead of seeing its connection closed. Only APIs whose response
//! has a top-level error code can be answered this way; any other is refused by closing.

use bytes::Bytes;
use kafka_protocol::messages::*;

use super::codec::encode_response;
use super::error_codes;

/// Kafka's UNSUPPORTED_SASL_MECHANISM: Shoal has no SASL yet.
const UNSUPPORTED_SASL_MECHANISM: i16 = 33;

macro_rules! error_answer {
    ($key:expr, $version:expr, $correlation_id:expr, $code:expr; $($api:ident => $response:ty),* $(,)?) => {
        match $key {
            $(ApiKey::$api => encode_response(
                $key,
                $version,
                $correlation_id,
                &<$response>::default().with_error_code($code),
            )
            .ok(),)*
            _ => None,
        }
    };
}

/// The framed error response, or None when this API/version cannot carry one.
pub fn error_response(key: ApiKey, version: i16, correlation_id: i32) -> Option<Bytes> {
    let range = key.valid_versions();
    if version < range.min || version > range.max {
        return None;
    }
    let code = if key == ApiKey::SaslHandshake {
        UNSUPPORTED_SASL_MECHANISM
    } else {
        error_codes::UNSUPPORTED_VERSION
    };
    error_answer!(key, version, correlation_id, code;
        SaslHandshake => SaslHandshakeResponse,
        SaslAuthenticate => SaslAuthenticateResponse,
        AddOffsetsToTxn => AddOffsetsToTxnResponse,
        AddPartitionsToTxn => AddPartitionsToTxnResponse,
        EndTxn => EndTxnResponse,
        ListTransactions => ListTransactionsResponse,
        DescribeAcls => DescribeAclsResponse,
        DescribeClientQuotas => DescribeClientQuotasResponse,
        DescribeLogDirs => DescribeLogDirsResponse,
        DescribeUserScramCredentials => DescribeUserScramCredentialsResponse,
        ElectLeaders => ElectLeadersResponse,
        AlterPartitionReassignments => AlterPartitionReassignmentsResponse,
        ListPartitionReassignments => ListPartitionReassignmentsResponse,
        CreateDelegationToken => CreateDelegationTokenResponse,
        RenewDelegationToken => RenewDelegationTokenResponse,
        ExpireDelegationToken => ExpireDelegationTokenResponse,
        DescribeDelegationToken => DescribeDelegationTokenResponse,
        UpdateFeatures => UpdateFeaturesResponse,
        ConsumerGroupHeartbeat => ConsumerGroupHeartbeatResponse,
        ShareGroupHeartbeat => ShareGroupHeartbeatResponse,
        ShareFetch => ShareFetchResponse,
        ShareAcknowledge => ShareAcknowledgeResponse,
        GetTelemetrySubscriptions => GetTelemetrySubscriptionsResponse,
        PushTelemetry => PushTelemetryResponse,
        DescribeQuorum => DescribeQuorumResponse,
        // Served APIs, asked for at a version outside the advertised range.
        Fetch => FetchResponse,
        FindCoordinator => FindCoordinatorResponse,
        JoinGroup => JoinGroupResponse,
        SyncGroup => SyncGroupResponse,
        Heartbeat => HeartbeatResponse,
        LeaveGroup => LeaveGroupResponse,
        ListGroups => ListGroupsResponse,
        OffsetFetch => OffsetFetchResponse,
        OffsetDelete => OffsetDeleteResponse,
        InitProducerId => InitProducerIdResponse,
        DescribeCluster => DescribeClusterResponse,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unimplemented_apis_get_an_error_answer() {
        let frame = error_response(ApiKey::DescribeAcls, 1, 7).expect("answerable");
        // size, correlation id, throttle time, then the error code.
        assert_eq!(&frame[4..8], &7i32.to_be_bytes());
        assert_eq!(
            &frame[12..14],
            &error_codes::UNSUPPORTED_VERSION.to_be_bytes()
        );
        assert!(error_response(ApiKey::SaslHandshake, 1, 1).is_some());
        // Produce has no top-level error code: it cannot be answered this way.
        assert!(error_response(ApiKey::Produce, 2, 1).is_none());
    }
}
