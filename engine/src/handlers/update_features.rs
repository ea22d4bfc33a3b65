//! UpdateFeatures (KIP-584; `kafka-features upgrade/downgrade`, Admin `updateFeatures`): the
//! finalized levels of the features Shoal serves at more than one level, validated as Kafka's
//! controller validates them and set all together or not at all.

use kafka_protocol::protocol::StrBytes;
use shoal_coordinator::acl::Operation;
use shoal_coordinator::commands::SetFeatureLevels;
use shoal_coordinator::features::{feature, FinalizedFeatures};
use shoal_protocol::messages::update_features_request::FeatureUpdateKey;
use shoal_protocol::messages::update_features_response::UpdatableFeatureResult;
use shoal_protocol::messages::{UpdateFeaturesRequest, UpdateFeaturesResponse};
use shoal_protocol::ResponseError;

use crate::context::Call;

/// FeatureUpdate.UpgradeType's codes (v1+; v0 says AllowDowngrade instead).
const UPGRADE: i8 = 1;
const SAFE_DOWNGRADE: i8 = 2;
const UNSAFE_DOWNGRADE: i8 = 3;

/// From v1 the request may only validate; from v2 the answer carries no per-feature results.
const VALIDATE_ONLY_FROM: i16 = 1;
const NO_RESULTS_FROM: i16 = 2;

/// Rounds lost to another broker's change before giving up.
const CONFLICTS_MAX: usize = 3;

pub async fn handle(call: &Call<'_>, request: UpdateFeaturesRequest) -> UpdateFeaturesResponse {
    if !call.authorized_on_cluster(Operation::Alter) {
        return refused(
            call,
            &request,
            ResponseError::ClusterAuthorizationFailed,
            None,
        );
    }
    let shard = &call.broker.shard;
    let mut current = shard.topics.load().features().clone();
    for _ in 0..CONFLICTS_MAX {
        let changes = match changes(call, &request, &current) {
            Ok(changes) => changes,
            Err(message) => {
                let message = format!(
                    "The update failed for all features since the following feature had an error: {message}"
                );
                return refused(
                    call,
                    &request,
                    ResponseError::InvalidUpdateVersion,
                    Some(message),
                );
            }
        };
        if call.version >= VALIDATE_ONLY_FROM && request.validate_only {
            return answered(call, &request);
        }
        let command = SetFeatureLevels {
            expected_epoch: current.epoch,
            changes,
        };
        match shard.coordinator.run(command).await {
            Ok(Ok(())) => return answered(call, &request),
            // Another change came first: validate against it.
            Ok(Err(now)) => current = now,
            Err(_) => break,
        }
    }
    refused(call, &request, ResponseError::FeatureUpdateFailed, None)
}

/// Each update as (feature, level), or why the request is refused (Kafka's words).
fn changes(
    call: &Call<'_>,
    request: &UpdateFeaturesRequest,
    current: &FinalizedFeatures,
) -> Result<Vec<(String, i16)>, String> {
    let node = call.broker.config.node_id;
    let mut changes = Vec::with_capacity(request.feature_updates.len());
    for update in &request.feature_updates {
        let name = update.feature.as_str();
        let level = update.max_version_level;
        let invalid =
            |why: &str| format!("Invalid update version {level} for feature {name}. {why}");
        let Some(served) = feature(name) else {
            return Err(invalid(&format!(
                "Local controller {node} does not support this feature."
            )));
        };
        if !(0..=served.max_level).contains(&level) {
            return Err(invalid(&format!(
                "Local controller {node} only supports versions 0-{}",
                served.max_level
            )));
        }
        let upgrade_type = upgrade_type(call.version, update);
        if ![UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE].contains(&upgrade_type) {
            return Err(invalid(&format!("Unknown upgrade type {upgrade_type}.")));
        }
        let now = current.level(name);
        if level < now && upgrade_type == UPGRADE {
            return Err(invalid(
                "Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.",
            ));
        }
        if level > now && upgrade_type != UPGRADE {
            return Err(invalid("Can't downgrade to a newer version."));
        }
        changes.push((name.to_string(), level));
    }
    Ok(changes)
}

fn upgrade_type(version: i16, update: &FeatureUpdateKey) -> i8 {
    match version {
        0 if update.allow_downgrade => SAFE_DOWNGRADE,
        0 => UPGRADE,
        _ => update.upgrade_type,
    }
}

fn answered(call: &Call<'_>, request: &UpdateFeaturesRequest) -> UpdateFeaturesResponse {
    with_results(call, request, UpdateFeaturesResponse::default(), 0, None)
}

/// Every feature refused with `error` (Kafka sets all or none).
fn refused(
    call: &Call<'_>,
    request: &UpdateFeaturesRequest,
    error: ResponseError,
    message: Option<String>,
) -> UpdateFeaturesResponse {
    let response = UpdateFeaturesResponse::default()
        .with_error_code(error.code())
        .with_error_message(message.clone().map(StrBytes::from_string));
    with_results(call, request, response, error.code(), message)
}

/// Before v2, one result per feature, each with the request's outcome.
fn with_results(
    call: &Call<'_>,
    request: &UpdateFeaturesRequest,
    response: UpdateFeaturesResponse,
    code: i16,
    message: Option<String>,
) -> UpdateFeaturesResponse {
    if call.version >= NO_RESULTS_FROM {
        return response;
    }
    let results = request
        .feature_updates
        .iter()
        .map(|update| {
            UpdatableFeatureResult::default()
                .with_feature(update.feature.clone())
                .with_error_code(code)
                .with_error_message(message.clone().map(StrBytes::from_string))
        })
        .collect();
    response.with_results(results)
}
