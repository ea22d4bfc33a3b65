//! DescribeTransactions and ListTransactions (KIP-664), as `kafka-transactions.sh` uses them.

use kafka_protocol::protocol::StrBytes;
use shoal_coordinator::acl::{Operation, ResourceType};
use shoal_coordinator::commands::{DescribeTransactions, ListTransactions};
use shoal_coordinator::{ErrorKind, Transaction, TransactionStatus};
use shoal_protocol::messages::describe_transactions_response::{TopicData, TransactionState};
use shoal_protocol::messages::list_transactions_response::TransactionState as ListedState;
use shoal_protocol::messages::{
    DescribeTransactionsRequest, DescribeTransactionsResponse, ListTransactionsRequest,
    ListTransactionsResponse, ProducerId, TopicName, TransactionalId,
};
use shoal_protocol::ResponseError;

use crate::context::Call;
use crate::kafka::error_codes;

/// Kafka's names of the states, as the admin tools show and filter them.
const STATES: [(&str, TransactionStatus); 6] = [
    ("Empty", TransactionStatus::Empty),
    ("Ongoing", TransactionStatus::Ongoing),
    ("PrepareCommit", TransactionStatus::PrepareCommit),
    ("PrepareAbort", TransactionStatus::PrepareAbort),
    ("CompleteCommit", TransactionStatus::CompleteCommit),
    ("CompleteAbort", TransactionStatus::CompleteAbort),
];

fn state_name(status: TransactionStatus) -> &'static str {
    STATES
        .iter()
        .find(|(_, s)| *s == status)
        .map_or("Unknown", |(name, _)| name)
}

pub async fn describe(
    call: &Call<'_>,
    request: DescribeTransactionsRequest,
) -> DescribeTransactionsResponse {
    let ids: Vec<String> = request
        .transactional_ids
        .iter()
        .map(|id| id.0.to_string())
        .collect();
    let found = call
        .broker
        .shard
        .coordinator
        .run(DescribeTransactions {
            transactional_ids: ids.clone(),
        })
        .await
        .ok()
        .filter(|found| found.len() == ids.len());
    let view = call.broker.shard.topics.load();
    let states = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let state = TransactionState::default()
                .with_transactional_id(TransactionalId(StrBytes::from_string(id.clone())));
            let found = match &found {
                None => Err(ErrorKind::NotAvailable),
                Some(_)
                    if !call.authorized(Operation::Describe, ResourceType::TransactionalId, id) =>
                {
                    Err(ErrorKind::TransactionalIdAuthorizationFailed)
                }
                Some(found) => found[i].as_ref().ok_or(ErrorKind::TransactionalIdNotFound),
            };
            let t: &Transaction = match found {
                Ok(t) => t,
                Err(e) => return state.with_error_code(error_codes::code_of(Some(e))),
            };
            let mut topics: Vec<TopicData> = Vec::new();
            for tp in &t.partitions {
                let Some(meta) = view.by_id(&tp.topic_id) else {
                    continue;
                };
                match topics.last_mut() {
                    Some(last) if last.topic.0.as_str() == meta.name => {
                        last.partitions.push(tp.partition)
                    }
                    _ => topics.push(
                        TopicData::default()
                            .with_topic(TopicName(StrBytes::from_string(meta.name.clone())))
                            .with_partitions(vec![tp.partition]),
                    ),
                }
            }
            state
                .with_transaction_state(StrBytes::from_static_str(state_name(t.status)))
                .with_transaction_timeout_ms(t.timeout_ms)
                .with_transaction_start_time_ms(t.started_ms)
                .with_producer_id(ProducerId(t.producer_id))
                .with_producer_epoch(t.producer_epoch)
                .with_topics(topics)
        })
        .collect();
    DescribeTransactionsResponse::default().with_transaction_states(states)
}

pub async fn list(call: &Call<'_>, request: ListTransactionsRequest) -> ListTransactionsResponse {
    // v2 (KIP-1152): an empty or absent pattern lists every transaction.
    let pattern = match request.transactional_id_pattern.as_deref() {
        None | Some("") => None,
        Some(expression) => match shoal_shards::client_regex::whole_match(expression) {
            Some(regex) => Some(regex),
            None => {
                return ListTransactionsResponse::default()
                    .with_error_code(ResponseError::InvalidRegularExpression.code())
            }
        },
    };
    let wanted: Vec<&str> = request.state_filters.iter().map(|s| s.as_str()).collect();
    let unknown: Vec<StrBytes> = request
        .state_filters
        .iter()
        .filter(|s| !STATES.iter().any(|(name, _)| *name == s.as_str()))
        .cloned()
        .collect();
    let Ok(all) = call.broker.shard.coordinator.run(ListTransactions).await else {
        return ListTransactionsResponse::default()
            .with_error_code(error_codes::code_of(Some(ErrorKind::NotAvailable)));
    };
    let now_ms = shoal_shards::maintenance::now_ms();
    let states = all
        .iter()
        .filter(|t| wanted.is_empty() || wanted.contains(&state_name(t.status)))
        .filter(|t| {
            request.producer_id_filters.is_empty()
                || request
                    .producer_id_filters
                    .iter()
                    .any(|p| p.0 == t.producer_id)
        })
        // v1: only transactions open longer than this many ms.
        .filter(|t| {
            request.duration_filter < 0
                || (t.started_ms >= 0 && now_ms - t.started_ms >= request.duration_filter)
        })
        .filter(|t| {
            pattern
                .as_ref()
                .is_none_or(|regex| regex.is_match(&t.transactional_id))
        })
        .filter(|t| {
            call.authorized(
                Operation::Describe,
                ResourceType::TransactionalId,
                &t.transactional_id,
            )
        })
        .map(|t| {
            ListedState::default()
                .with_transactional_id(TransactionalId(StrBytes::from_string(
                    t.transactional_id.clone(),
                )))
                .with_producer_id(ProducerId(t.producer_id))
                .with_transaction_state(StrBytes::from_static_str(state_name(t.status)))
        })
        .collect();
    ListTransactionsResponse::default()
        .with_unknown_state_filters(unknown)
        .with_transaction_states(states)
}
