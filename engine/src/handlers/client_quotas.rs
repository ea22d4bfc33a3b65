//! DescribeClientQuotas (48) and AlterClientQuotas (49), as kafka-configs uses them with
//! `--entity-type users` / `clients` (and both): quotas per user, per client id or per
//! (user, client id), a null name being the type's default entity. Checked and kept by the
//! coordinator, in its log.

use kafka_protocol::protocol::StrBytes;
use shoal_coordinator::acl::Operation;
use shoal_coordinator::client_quotas::QuotaMatch;
use shoal_coordinator::commands::{AlterClientQuotas, DescribeClientQuotas, QuotaAlteration};
use shoal_coordinator::ErrorKind;
use shoal_protocol::messages::alter_client_quotas_request::EntryData as AlterClientQuotasRequestEntry;
use shoal_protocol::messages::alter_client_quotas_response::{
    EntityData as AlteredEntity, EntryData as AlteredEntry,
};
use shoal_protocol::messages::describe_client_quotas_response::{EntityData, EntryData, ValueData};
use shoal_protocol::messages::{
    AlterClientQuotasRequest, AlterClientQuotasResponse, DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
};
use shoal_protocol::ResponseError;

use crate::context::Call;
use crate::kafka::error_codes::code_of;

/// DescribeClientQuotas' match types.
const MATCH_EXACT: i8 = 0;
const MATCH_DEFAULT: i8 = 1;
const MATCH_ANY: i8 = 2;

pub async fn describe(
    call: &Call<'_>,
    request: DescribeClientQuotasRequest,
) -> DescribeClientQuotasResponse {
    if !call.authorized_on_cluster(Operation::DescribeConfigs) {
        return DescribeClientQuotasResponse::default()
            .with_error_code(ResponseError::ClusterAuthorizationFailed.code());
    }
    let filter = match quota_filter(&request) {
        Ok(filter) => filter,
        Err(message) => {
            return DescribeClientQuotasResponse::default()
                .with_error_code(ResponseError::InvalidRequest.code())
                .with_error_message(Some(StrBytes::from_string(message)))
        }
    };
    let describe = DescribeClientQuotas {
        filter,
        strict: request.strict,
    };
    let Ok(found) = call.broker.shard.coordinator.run(describe).await else {
        return DescribeClientQuotasResponse::default()
            .with_error_code(ResponseError::CoordinatorNotAvailable.code());
    };
    let entries = found
        .into_iter()
        .map(|(entity, values)| {
            EntryData::default()
                .with_entity(
                    entity
                        .into_iter()
                        .map(|(entity_type, name)| {
                            EntityData::default()
                                .with_entity_type(StrBytes::from_string(entity_type))
                                .with_entity_name(name.map(StrBytes::from_string))
                        })
                        .collect(),
                )
                .with_values(
                    values
                        .into_iter()
                        .map(|(key, value)| {
                            ValueData::default()
                                .with_key(StrBytes::from_string(key))
                                .with_value(value)
                        })
                        .collect(),
                )
        })
        .collect();
    DescribeClientQuotasResponse::default().with_entries(Some(entries))
}

/// The request's components as the coordinator matches them; Kafka's INVALID_REQUEST for a
/// type named twice or a match that does not fit its match type.
fn quota_filter(
    request: &DescribeClientQuotasRequest,
) -> Result<Vec<(String, QuotaMatch)>, String> {
    let mut filter: Vec<(String, QuotaMatch)> = Vec::new();
    for component in &request.components {
        let entity_type = component.entity_type.to_string();
        if filter.iter().any(|(t, _)| *t == entity_type) {
            return Err(format!("entity type {entity_type} is named twice"));
        }
        let matching = match (component.match_type, &component._match) {
            (MATCH_EXACT, Some(name)) => QuotaMatch::Exact(name.to_string()),
            (MATCH_DEFAULT, None) => QuotaMatch::Default,
            (MATCH_ANY, None) => QuotaMatch::Any,
            (match_type, name) => {
                return Err(format!(
                    "match type {match_type} with match {:?} is not a filter",
                    name.as_deref()
                ))
            }
        };
        filter.push((entity_type, matching));
    }
    Ok(filter)
}

pub async fn alter(
    call: &Call<'_>,
    request: AlterClientQuotasRequest,
) -> AlterClientQuotasResponse {
    let entities: Vec<Vec<AlteredEntity>> = request
        .entries
        .iter()
        .map(|entry| {
            entry
                .entity
                .iter()
                .map(|e| {
                    AlteredEntity::default()
                        .with_entity_type(e.entity_type.clone())
                        .with_entity_name(e.entity_name.clone())
                })
                .collect()
        })
        .collect();
    if !call.authorized_on_cluster(Operation::AlterConfigs) {
        let denied = (ErrorKind::ClusterAuthorizationFailed, String::new());
        let entries = entities
            .into_iter()
            .map(|e| answer(e, Err(denied.clone())))
            .collect();
        return AlterClientQuotasResponse::default().with_entries(entries);
    }
    let alter = AlterClientQuotas {
        entries: request.entries.iter().map(alteration).collect(),
        validate_only: request.validate_only,
    };
    let outcomes = match call.broker.shard.coordinator.run(alter).await {
        Ok(outcomes) => outcomes,
        Err(_) => {
            let unanswered = (
                ErrorKind::NotAvailable,
                "The coordinator did not answer.".into(),
            );
            vec![Err(unanswered); entities.len()]
        }
    };
    let entries = entities
        .into_iter()
        .zip(outcomes)
        .map(|(entity, outcome)| answer(entity, outcome))
        .collect();
    AlterClientQuotasResponse::default().with_entries(entries)
}

/// One entry of the request as the coordinator takes it: the entity by (type, name), and
/// each quota's new value (None: removed).
fn alteration(entry: &AlterClientQuotasRequestEntry) -> QuotaAlteration {
    QuotaAlteration {
        entity: (entry.entity.iter())
            .map(|e| {
                let name = e.entity_name.as_ref().map(ToString::to_string);
                (e.entity_type.to_string(), name)
            })
            .collect(),
        quotas: (entry.ops.iter())
            .map(|op| (op.key.to_string(), (!op.remove).then_some(op.value)))
            .collect(),
    }
}

/// One entry's answer.
fn answer(entity: Vec<AlteredEntity>, outcome: Result<(), (ErrorKind, String)>) -> AlteredEntry {
    let (code, message) = match outcome {
        Ok(()) => (0, None),
        Err((error, message)) => (code_of(Some(error)), Some(StrBytes::from_string(message))),
    };
    AlteredEntry::default()
        .with_entity(entity)
        .with_error_code(code)
        .with_error_message(message)
}
