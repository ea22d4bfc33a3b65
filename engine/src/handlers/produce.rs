use kafka_protocol::protocol::StrBytes;
use shoal_coordinator::acl::{Operation, ResourceType};
use shoal_coordinator::features::{TRANSACTIONS_V2_LEVEL, TRANSACTION_VERSION};
use shoal_coordinator::{ErrorKind, TopicPartition};
use shoal_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse, TopicProduceResponse,
};
use shoal_protocol::messages::{ProduceRequest, ProduceResponse};
use shoal_protocol::ResponseError;
use shoal_shards::{PartitionProduce, PartitionProduceResult, ProduceRules};

use super::topics;
use crate::context::Call;
use crate::kafka::error_codes;

/// A partition either becomes a write (Ok: its index in the writes) or is answered now.
type PartitionPlan = (i32, Result<usize, ErrorKind>);

/// Versions from 13 on name topics by id instead of by name (KIP-516).
const TOPIC_IDS_FROM_VERSION: i16 = 13;

/// The Produce version from which a transactional producer runs transactions V2: the Java
/// client sends it only then, capping itself at 11 for the older protocol (KIP-890).
const TRANSACTIONS_V2_PRODUCE_FROM: i16 = 12;

/// For acks=0 the answer is computed but not sent (the connection drops it).
pub async fn handle(call: &Call<'_>, request: ProduceRequest) -> ProduceResponse {
    let broker = call.broker;
    let acks = request.acks;
    if !matches!(acks, -1..=1) {
        return reject_all(request, ResponseError::InvalidRequiredAcks.code());
    }
    // Kafka: a transactional produce needs WRITE on its transactional id too.
    if let Some(id) = request
        .transactional_id
        .as_ref()
        .filter(|id| !id.is_empty())
    {
        if !call.authorized(Operation::Write, ResourceType::TransactionalId, id.as_str()) {
            return reject_all(
                request,
                ResponseError::TransactionalIdAuthorizationFailed.code(),
            );
        }
    }
    let by_id = call.version >= TOPIC_IDS_FROM_VERSION;
    // One view of the catalogue per request: the ids topics are named by, and the features.
    let view = broker.shard.topics.load_full();
    let ids = by_id.then_some(&*view);
    // Transactions V2 only while finalized: below level 2 a write joins no transaction, as
    // on Kafka, even from a client that sends Produce v12+.
    let joins_allowed = call.version >= TRANSACTIONS_V2_PRODUCE_FROM
        && view.features().level(TRANSACTION_VERSION) >= TRANSACTIONS_V2_LEVEL;
    // Per topic: its index in the request, whether it named an id no topic has, its partitions.
    let mut plan: Vec<(usize, bool, Vec<PartitionPlan>)> = Vec::new();
    let mut writes = Vec::new();
    for (topic_index, topic) in request.topic_data.iter().enumerate() {
        // By id, the topic must exist: an id cannot create one.
        let named = topics::requested_name(ids, &topic.topic_id, &topic.name.0);
        let unknown_id = named.is_none();
        let name = named.unwrap_or_default();
        let meta = if unknown_id {
            Err(ErrorKind::UnknownTopicOrPartition)
        } else {
            match call.check_topic(Operation::Write, name) {
                Ok(()) => {
                    topics::resolve(broker, name, !by_id && call.may_create_topic(name)).await
                }
                Err(denied) => Err(denied),
            }
        };
        let mut partitions = Vec::new();
        for p in &topic.partition_data {
            let outcome = match (&meta, &p.records) {
                (Err(e), _) => Err(*e),
                (Ok(meta), _) if p.index < 0 || p.index >= meta.partitions => {
                    Err(ErrorKind::UnknownTopicOrPartition)
                }
                // Mirrored from another cluster: refused before anything is written.
                (Ok(meta), _) if meta.is_read_only(p.index) => Err(ErrorKind::ReadOnlyTopic),
                (Ok(_), None) => Err(ErrorKind::CorruptMessage),
                (Ok(meta), Some(records)) => {
                    writes.push(PartitionProduce {
                        partition: TopicPartition {
                            topic_id: meta.id,
                            partition: p.index,
                        },
                        records: records.clone(),
                        rules: ProduceRules {
                            joins_transaction: joins_allowed,
                            ..ProduceRules::for_topic(name, &meta.config, call.version)
                        },
                    });
                    Ok(writes.len() - 1)
                }
            };
            partitions.push((p.index, outcome));
        }
        plan.push((topic_index, unknown_id, partitions));
    }
    let writes_log_append_time: Vec<bool> =
        writes.iter().map(|w| w.rules.log_append_time).collect();
    let bytes_in: usize = writes.iter().map(|w| w.records.len()).sum();
    broker
        .shard
        .metrics
        .counters
        .produce_bytes_in
        .add(bytes_in as u64);
    let results = broker.shard.produce(writes).await;
    let mut response = ProduceResponse::default();
    for (topic_index, unknown_id, partitions) in plan {
        let topic = &request.topic_data[topic_index];
        let partition_responses = partitions
            .into_iter()
            .map(|(index, outcome)| {
                let (result, log_append_time) = match outcome {
                    Ok(i) => (results[i].clone(), writes_log_append_time[i]),
                    Err(e) => (PartitionProduceResult::failed(e), false),
                };
                let code = match unknown_id {
                    true => ResponseError::UnknownTopicId.code(),
                    false => error_codes::code_of(result.error),
                };
                let mut answer = PartitionProduceResponse::default()
                    .with_index(index)
                    .with_error_code(code)
                    .with_base_offset(result.base_offset)
                    // -1 tells the client the topic uses CreateTime.
                    .with_log_append_time_ms(if log_append_time {
                        result.log_append_time_ms
                    } else {
                        -1
                    })
                    .with_log_start_offset(result.log_start_offset);
                if let Some(e) = result.error {
                    answer.error_message =
                        Some(StrBytes::from_static_str(error_codes::message_of(e)));
                }
                // KIP-467 (v8+): which records of the batch were at fault.
                if let (Some(e), true) = (result.error, call.version >= 8) {
                    answer.record_errors = result
                        .bad_records
                        .iter()
                        .map(|index| {
                            BatchIndexAndErrorMessage::default()
                                .with_batch_index(*index)
                                .with_batch_index_error_message(Some(StrBytes::from_static_str(
                                    error_codes::message_of(e),
                                )))
                        })
                        .collect();
                }
                answer
            })
            .collect();
        response.responses.push(
            TopicProduceResponse::default()
                .with_name(topic.name.clone())
                .with_topic_id(topic.topic_id)
                .with_partition_responses(partition_responses),
        );
    }
    response
}

fn reject_all(request: ProduceRequest, code: i16) -> ProduceResponse {
    let mut response = ProduceResponse::default();
    for topic in request.topic_data {
        response.responses.push(
            TopicProduceResponse::default()
                .with_name(topic.name)
                .with_topic_id(topic.topic_id)
                .with_partition_responses(
                    topic
                        .partition_data
                        .iter()
                        .map(|p| {
                            PartitionProduceResponse::default()
                                .with_index(p.index)
                                .with_error_code(code)
                        })
                        .collect(),
                ),
        );
    }
    response
}
