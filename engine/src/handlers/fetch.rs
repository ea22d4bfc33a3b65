use std::time::Duration;

use kafka_protocol::protocol::StrBytes;
use shoal_coordinator::acl::Operation;
use shoal_coordinator::TopicPartition;
use shoal_protocol::messages::fetch_response::{
    AbortedTransaction, FetchableTopicResponse, PartitionData,
};
use shoal_protocol::messages::{BrokerId, FetchRequest, FetchResponse, ProducerId, TopicName};
use shoal_protocol::ResponseError;
use shoal_shards::PartitionFetch;

use crate::context::Call;
use crate::kafka::error_codes;

/// Versions from 13 on name topics by id instead of by name.
const TOPIC_IDS_FROM_VERSION: i16 = 13;

pub async fn handle(call: &Call<'_>, request: FetchRequest) -> FetchResponse {
    let broker = call.broker;
    let version = call.version;
    let view = broker.shard.topics.load();
    let by_id = version >= TOPIC_IDS_FROM_VERSION;
    let unknown_topic = if by_id {
        ResponseError::UnknownTopicId.code()
    } else {
        ResponseError::UnknownTopicOrPartition.code()
    };
    let mut fetches = Vec::new();
    // Per topic and partition: Ok(index into `fetches`) or the error to answer now.
    let mut plan = Vec::new();
    // A consumer in another rack is sent to a broker of its own (KIP-392), per partition.
    let rack = request.rack_id.as_str();
    let mut redirects = std::collections::HashMap::new();
    // Kafka's isolation level 1: records of open transactions stay hidden, aborted ones are
    // listed for the client to skip.
    let read_committed = request.isolation_level == 1;
    for topic in &request.topics {
        let meta = if by_id {
            view.by_id(&topic.topic_id)
        } else {
            view.by_name(topic.topic.0.as_str())
        };
        // A name the client may not read is refused whether or not it exists, as Kafka does.
        let name = meta.map_or(topic.topic.0.as_str(), |m| m.name.as_str());
        let readable = call.check_topic(Operation::Read, name).is_ok();
        let mut partitions = Vec::new();
        for p in &topic.partitions {
            let slot = match meta {
                None if by_id => Err(unknown_topic),
                _ if !readable => Err(ResponseError::TopicAuthorizationFailed.code()),
                Some(m) if p.partition >= 0 && p.partition < m.partitions => {
                    let redirect = call.preferred_read_replica(m.id, p.partition, rack);
                    if let Some(node) = redirect {
                        redirects.insert(fetches.len(), node);
                    }
                    fetches.push(PartitionFetch {
                        partition: TopicPartition {
                            topic_id: m.id,
                            partition: p.partition,
                        },
                        offset: p.fetch_offset,
                        max_bytes: p.partition_max_bytes.max(0) as u32,
                        read_committed,
                        // Sent elsewhere: its offsets are answered, its records not read.
                        offsets_only: redirect.is_some(),
                    });
                    Ok(fetches.len() - 1)
                }
                _ => Err(unknown_topic),
            };
            partitions.push((p.partition, slot));
        }
        plan.push(partitions);
    }
    // A partition the broker cannot serve is an error to report now, as Kafka does; no
    // client waits longer than `fetch.max_wait_ms` or gets more than `fetch.max_bytes`.
    let any_refused = plan.iter().flatten().any(|(_, slot)| slot.is_err());
    // As Kafka does, a fetch that names another broker to read from is answered at once.
    let live = &broker.shard.config.live;
    let max_wait = if any_refused || !redirects.is_empty() {
        Duration::ZERO
    } else {
        live.fetch_wait(request.max_wait_ms)
    };
    // Kafka caps a consumer's fetch at what its quota allows over the quota's windows.
    let quota_bytes = call.fetch_quota_bytes().unwrap_or(u64::MAX);
    let max_bytes = live
        .fetch_bytes(request.max_bytes)
        .min(usize::try_from(quota_bytes).unwrap_or(usize::MAX));
    let results = broker
        .shard
        .fetch(
            fetches,
            max_bytes as u32,
            (request.min_bytes.max(0) as u32).min(max_bytes as u32),
            max_wait,
        )
        .await;
    let bytes_out: usize = results.iter().map(|r| r.records.len()).sum();
    if !call.fetch_within_quota(bytes_out as u64) {
        // Over its consumer_byte_rate: nothing now, and a throttle time (KIP-219).
        return FetchResponse::default();
    }
    broker.shard.metrics.counters.count_fetched(bytes_out);
    let mut response = FetchResponse::default();
    for (topic, partitions) in request.topics.iter().zip(plan) {
        let name = if by_id {
            view.by_id(&topic.topic_id)
                .map(|m| TopicName(StrBytes::from_string(m.name.clone())))
                .unwrap_or_default()
        } else {
            topic.topic.clone()
        };
        let partitions = partitions
            .into_iter()
            .map(|(index, slot)| {
                let data = PartitionData::default().with_partition_index(index);
                match slot {
                    Err(code) => data.with_error_code(code).with_high_watermark(-1),
                    Ok(i) => {
                        let r = &results[i];
                        let data = data
                            .with_error_code(error_codes::code_of(r.error))
                            .with_high_watermark(r.high_watermark)
                            .with_last_stable_offset(r.last_stable_offset)
                            .with_log_start_offset(r.log_start_offset)
                            .with_aborted_transactions(read_committed.then(|| {
                                r.aborted
                                    .iter()
                                    .map(|a| {
                                        AbortedTransaction::default()
                                            .with_producer_id(ProducerId(a.producer_id))
                                            .with_first_offset(a.first_offset)
                                    })
                                    .collect()
                            }));
                        match redirects.get(&i) {
                            // The client reads from there; no records from here.
                            Some(&node) => data.with_preferred_read_replica(BrokerId(node)),
                            None => data.with_records(Some(r.records.clone())),
                        }
                    }
                }
            })
            .collect();
        response.responses.push(
            FetchableTopicResponse::default()
                .with_topic(name)
                .with_topic_id(topic.topic_id)
                .with_partitions(partitions),
        );
    }
    response
}
