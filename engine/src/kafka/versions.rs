//! The API versions Shoal serves, advertised in ApiVersions exactly as handled.

use kafka_protocol::messages::ApiKey;

use crate::kafka::codec::Api;

/// (API, min version, max version). Every entry has a handler that implements the semantics
/// of all versions in its range.
pub const SUPPORTED: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 9),
    (ApiKey::Fetch, 4, 13),
    (ApiKey::ListOffsets, 1, 8),
    (ApiKey::Metadata, 0, 12),
    (ApiKey::ApiVersions, 0, 3),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::DeleteTopics, 1, 6),
    (ApiKey::DeleteRecords, 0, 2),
    (ApiKey::InitProducerId, 0, 4),
    (ApiKey::CreatePartitions, 0, 3),
    (ApiKey::DescribeCluster, 0, 1),
    (ApiKey::FindCoordinator, 0, 4),
    (ApiKey::OffsetForLeaderEpoch, 2, 4),
    (ApiKey::DescribeProducers, 0, 0),
    (ApiKey::DescribeConfigs, 1, 4),
    (ApiKey::AlterConfigs, 0, 2),
    (ApiKey::IncrementalAlterConfigs, 0, 1),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::OffsetCommit, 2, 8),
    (ApiKey::OffsetFetch, 1, 8),
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::DescribeGroups, 0, 5),
    (ApiKey::DeleteGroups, 0, 2),
    (ApiKey::OffsetDelete, 0, 0),
];

pub fn supported_range(api_key: ApiKey) -> Option<(i16, i16)> {
    SUPPORTED
        .iter()
        .find(|(key, _, _)| *key == api_key)
        .map(|(_, min, max)| (*min, *max))
}

pub fn is_supported(api: Api, version: i16) -> bool {
    match api {
        Api::Kafka(key) => {
            supported_range(key).is_some_and(|(min, max)| (min..=max).contains(&version))
        }
        // Each Diskless* API has only version 0.
        Api::Diskless(_) | Api::Mirror(_) => version == 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_advertised_range_is_one_the_codec_can_encode() {
        for (key, min, max) in SUPPORTED {
            let codec = key.valid_versions();
            assert!(codec.min <= *min && *max <= codec.max, "{key:?}");
        }
    }
}
