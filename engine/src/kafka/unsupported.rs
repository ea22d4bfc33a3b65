//! Answers for Kafka APIs Shoal does not serve: the API's own response carrying an error
//! code, so the client reports a clear error instead of seeing its connection closed. Only
//! APIs whose response has a top-level error code can be answered this way; any other is
//! refused by closing. (Served APIs asked for at an unserved version are answered from the
//! registry.)

use bytes::Bytes;
use shoal_protocol::frame::encode_response;
use shoal_protocol::messages::*;
use shoal_protocol::ResponseError;

macro_rules! error_answer {
    ($key:expr, $version:expr, $correlation_id:expr, $code:expr; $($api:ident => $response:ty),* $(,)?) => {
        match $key {
            $(ApiKey::$api => encode_response(
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
    // Shoal has no SASL yet.
    let code = if key == ApiKey::SaslHandshake {
        ResponseError::UnsupportedSaslMechanism.code()
    } else {
        ResponseError::UnsupportedVersion.code()
    };
    error_answer!(key, version, correlation_id, code;
        ElectLeaders => ElectLeadersResponse,
        AlterPartitionReassignments => AlterPartitionReassignmentsResponse,
        ListPartitionReassignments => ListPartitionReassignmentsResponse,
        UpdateFeatures => UpdateFeaturesResponse,
        ShareGroupHeartbeat => ShareGroupHeartbeatResponse,
        ShareFetch => ShareFetchResponse,
        ShareAcknowledge => ShareAcknowledgeResponse,
        GetTelemetrySubscriptions => GetTelemetrySubscriptionsResponse,
        PushTelemetry => PushTelemetryResponse,
        DescribeQuorum => DescribeQuorumResponse,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unimplemented_apis_get_an_error_answer() {
        let frame = error_response(ApiKey::ElectLeaders, 1, 7).expect("answerable");
        // size, correlation id, throttle time, then the error code.
        assert_eq!(&frame[4..8], &7i32.to_be_bytes());
        assert_eq!(
            &frame[12..14],
            &ResponseError::UnsupportedVersion.code().to_be_bytes()
        );
        assert!(error_response(ApiKey::UpdateFeatures, 1, 1).is_some());
        // Produce has no top-level error code: it cannot be answered this way.
        assert!(error_response(ApiKey::Produce, 2, 1).is_none());
        assert!(
            error_response(ApiKey::ListPartitionReassignments, 99, 1).is_none(),
            "unknown version"
        );
    }
}
