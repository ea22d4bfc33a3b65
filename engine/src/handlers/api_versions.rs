//! ApiVersions: every API of the registry with the versions it serves.

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};
use kafka_protocol::protocol::Request;
use shoal_protocol::codes::NONE;
use shoal_protocol::ResponseError;

use super::registry::{spec, APIS};
use crate::handlers::Call;

pub async fn handle(call: &Call<'_>, _request: ApiVersionsRequest) -> ApiVersionsResponse {
    let served = spec(ApiVersionsRequest::KEY).is_some_and(|s| s.serves(call.version));
    response(if served {
        NONE
    } else {
        ResponseError::UnsupportedVersion.code()
    })
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
