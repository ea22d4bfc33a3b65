use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::ApiVersionsResponse;

use crate::diskless::messages as diskless;
use crate::kafka::{error_codes, versions};
use crate::mirror::messages as mirror;

pub fn handle(version: i16) -> ApiVersionsResponse {
    let error_code = match versions::supported_range(kafka_protocol::messages::ApiKey::ApiVersions)
    {
        Some((min, max)) if (min..=max).contains(&version) => error_codes::NONE,
        _ => error_codes::UNSUPPORTED_VERSION,
    };
    ApiVersionsResponse::default()
        .with_error_code(error_code)
        .with_api_keys(
            versions::SUPPORTED
                .iter()
                .map(|(key, min, max)| (*key as i16, *min, *max))
                .chain(diskless::API_KEYS.iter().map(|key| (*key, 0, 0)))
                .chain(mirror::API_KEYS.iter().map(|key| (*key, 0, 0)))
                .map(|(key, min, max)| {
                    ApiVersion::default()
                        .with_api_key(key)
                        .with_min_version(min)
                        .with_max_version(max)
                })
                .collect(),
        )
}
