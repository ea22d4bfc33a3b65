//! ApiVersions: every API of the registry with the versions it serves.

use kafka_protocol::protocol::{Request, StrBytes};
use shoal_coordinator::features::{FinalizedFeatures, FEATURES};
use shoal_protocol::codes::NONE;
use shoal_protocol::messages::api_versions_response::{
    ApiVersion, FinalizedFeatureKey, SupportedFeatureKey,
};
use shoal_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};
use shoal_protocol::ResponseError;

use super::registry::{spec, APIS};
use crate::context::Call;

/// From v5 a client names the cluster and node it means to reach (KIP-1242).
const INTENDED_NODE_FROM: i16 = 5;

pub async fn handle(call: &Call<'_>, request: ApiVersionsRequest) -> ApiVersionsResponse {
    let served = spec(ApiVersionsRequest::KEY).is_some_and(|s| s.serves(call.version));
    let response = response(if !served {
        ResponseError::UnsupportedVersion.code()
    } else if call.version >= INTENDED_NODE_FROM && !meant_for_us(call, &request) {
        // The client's metadata points at another cluster or node (an address reused after a
        // move): it must bootstrap again rather than talk to the wrong broker.
        ResponseError::RebootstrapRequired.code()
    } else {
        NONE
    });
    // Features are v3's tagged fields.
    match served && call.version >= 3 {
        true => with_features(
            response,
            call.version,
            call.broker.shard.topics.load().features(),
        ),
        false => response,
    }
}

/// Whether the cluster and node the client names, where it names them, are this broker's.
fn meant_for_us(call: &Call<'_>, request: &ApiVersionsRequest) -> bool {
    let config = &call.broker.config;
    let cluster_matches = request
        .cluster_id
        .as_ref()
        .is_none_or(|id| id.as_str() == config.cluster_id);
    let node_matches = request.node_id < 0 || request.node_id == config.node_id;
    cluster_matches && node_matches
}

/// Before v4, clients refuse a supported feature whose lowest version is 0 (KAFKA-17011):
/// Kafka leaves those out of older answers, and so does Shoal (every feature it serves starts
/// at 0).
const FEATURE_LEVEL_0_LISTED_FROM: i16 = 4;

/// The lowest level of every feature Shoal serves.
const FEATURE_MIN_VERSION: i16 = 0;

/// The features Shoal serves (KIP-584) and their finalized levels, with the epoch of those:
/// clients take the levels of the highest epoch they have seen.
fn with_features(
    response: ApiVersionsResponse,
    version: i16,
    finalized: &FinalizedFeatures,
) -> ApiVersionsResponse {
    let name = StrBytes::from_static_str;
    let list_supported = version >= FEATURE_LEVEL_0_LISTED_FROM;
    response
        .with_supported_features(
            FEATURES
                .iter()
                .filter(|_| list_supported)
                .map(|feature| {
                    SupportedFeatureKey::default()
                        .with_name(name(feature.name))
                        .with_min_version(FEATURE_MIN_VERSION)
                        .with_max_version(feature.max_level)
                })
                .collect(),
        )
        .with_finalized_features_epoch(finalized.epoch)
        // Kafka lists a finalized feature only above level 0.
        .with_finalized_features(
            finalized
                .levels()
                .filter(|&(_, level)| level > 0)
                .map(|(feature, level)| {
                    FinalizedFeatureKey::default()
                        .with_name(name(feature))
                        .with_min_version_level(level)
                        .with_max_version_level(level)
                })
                .collect(),
        )
}

/// The advertised versions with `error_code`; also the v0 answer to an ApiVersions version
/// the broker does not know, so the client can pick one it does.
pub fn response(error_code: i16) -> ApiVersionsResponse {
    ApiVersionsResponse::default()
        .with_error_code(error_code)
        .with_api_keys(
            APIS.iter()
                .map(|spec| {
                    ApiVersion::default()
                        .with_api_key(spec.key)
                        .with_min_version(spec.min_version)
                        .with_max_version(spec.max_version)
                })
                .collect(),
        )
}
