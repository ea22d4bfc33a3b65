//! Share groups' dead-letter queues (KIP-1191): the records a share group with
//! `errors.deadletterqueue.topic.name` gives up on (rejected by a member, or released at
//! `share.delivery.count.limit`) are written to that topic with Kafka's `__dlq.errors.*`
//! headers (and, with `errors.deadletterqueue.copy.record.enable`, the original key and value;
//! Kafka 4.4 does not copy the original's headers, so neither does Shoal), then archived. The share-partition holds them until then, in its state in the
//! coordinator's log too, so a broker killed between gives them to the writer again: a record
//! may reach the dead-letter topic twice, never not at all, unless the topic cannot take it.
//! Then, as on Kafka, it is archived anyway and the reason logged: a misconfigured topic
//! never holds a share-partition back.
//!
//! Run by the ShareFetch or ShareAcknowledge that gave the records up (or found their locks
//! run out), before it is answered.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use shoal_coordinator::topic_configs::{set_topic_config, TopicOverrides, DEAD_LETTERS_ENABLED};
use shoal_coordinator::{ErrorKind, TopicConfig, TopicMeta, TopicPartition};
use shoal_shards::groups::share::calls::{DeadLettered, TakeDeadLetters};
use shoal_shards::groups::share::partition::DeadLetterRun;
use shoal_shards::{PartitionFetch, PartitionProduce, ProduceRules};
use shoal_wal::batch::{BatchBuilder, RecordHeader};
use shoal_wal::decompress::Codec;
use shoal_wal::records::with_keyed_records;
use shoal_wal::BatchHeader;

use crate::context::Broker;
use crate::handlers::configs::group_configs::dead_letter_settings;
use crate::handlers::topics;

/// Kafka's context headers, in the order it writes them.
const HEADER_TOPIC: &str = "__dlq.errors.topic";
const HEADER_PARTITION: &str = "__dlq.errors.partition";
const HEADER_OFFSET: &str = "__dlq.errors.offset";
const HEADER_GROUP: &str = "__dlq.errors.group";
const HEADER_DELIVERY_COUNT: &str = "__dlq.errors.delivery.count";
const HEADER_MESSAGE: &str = "__dlq.errors.message";
/// A dead-letter topic the broker creates is read by its records' own time (Kafka sets it).
const TIMESTAMP_TYPE: (&str, &str) = ("message.timestamp.type", "CreateTime");
/// The source records of a run are read this many bytes at a time (Kafka reads 1 MiB).
const READ_BYTES: u32 = 1 << 20;
/// A source batch may not inflate past this while it is read for copying.
const INFLATED_MAX_BYTES: usize = 64 << 20;
/// The Produce version whose rules the writes follow (zstd allowed).
const PRODUCE_VERSION: i16 = 9;
/// What each record of a batch is counted as beyond its key and value (its context headers
/// and framing), so that a batch stays under the topic's `max.message.bytes`.
const RECORD_OVERHEAD_BYTES: usize = 64;

/// Writes the records `group_id` gave up on to its dead-letter topic and archives them.
pub async fn write_given_up(broker: &Broker, group_id: &str) {
    let Some((topic, copy)) = dead_letter_settings(&broker.shard.topics.load(), group_id) else {
        return;
    };
    let take = TakeDeadLetters(group_id.to_string());
    let Ok(runs) = broker.shard.group_call(group_id, take).await else {
        return;
    };
    for (partition, run) in runs {
        if let Err(why) = write_run(broker, group_id, &topic, copy, partition, run).await {
            tracing::warn!(
                group = group_id,
                dead_letter_topic = topic,
                first_offset = run.first_offset,
                last_offset = run.last_offset,
                why,
                "records a share group gave up on are archived without reaching its dead-letter topic"
            );
        }
        let done = DeadLettered {
            group_id: group_id.to_string(),
            partition,
            run,
        };
        // A group another shard or broker took over meanwhile has them written there again.
        if let Err(error) = broker.shard.try_group_call(group_id, done).await {
            tracing::debug!(
                group = group_id,
                ?error,
                "dead-lettered records not archived here"
            );
        }
    }
}

/// One run's records, written to the dead-letter topic's partition of the same number
/// (modulo its partition count).
async fn write_run(
    broker: &Broker,
    group_id: &str,
    topic: &str,
    copy: bool,
    source: TopicPartition,
    run: DeadLetterRun,
) -> Result<(), String> {
    let prefix = &broker.config.dead_letters.topic_prefix;
    if !topic.starts_with(prefix.as_str()) {
        return Err(format!(
            "the topic does not start with the prefix {prefix:?} that [dead_letters] topic_prefix requires"
        ));
    }
    let target = dead_letter_topic(broker, topic).await?;
    let source_topic = match broker.shard.topics.load().by_id(&source.topic_id) {
        Some(meta) => meta.name.clone(),
        None => source.topic_id.to_string(),
    };
    let originals = match copy {
        true => read_originals(broker, source, run).await?,
        false => BTreeMap::new(),
    };
    let context = Context {
        topic: source_topic,
        partition: source.partition.to_string(),
        group: group_id.to_string(),
        deliveries: run.deliveries.to_string(),
        message: run.cause.message(),
    };
    let partition = TopicPartition {
        topic_id: target.id,
        partition: source.partition % target.partitions.max(1),
    };
    // A mirror's partitions take only its source's records, at its source's offsets.
    if target.is_read_only(partition.partition) {
        return Err("the topic is a mirror topic, which takes no writes".to_string());
    }
    let max_bytes = (target.config.max_message_bytes.max(1) as usize) / 2;
    let rules = ProduceRules::for_topic(&target.name, &target.config, PRODUCE_VERSION);
    let mut offset = run.first_offset;
    while offset <= run.last_offset {
        let (batch, next) = batch_from(&context, &originals, offset, run.last_offset, max_bytes)?;
        let write = PartitionProduce {
            partition,
            records: batch,
            rules: rules.clone(),
        };
        let written = broker.shard.produce(vec![write]).await;
        if let Some(error) = written.first().and_then(|w| w.error) {
            return Err(format!("the write was refused: {error:?}"));
        }
        offset = next;
    }
    Ok(())
}

/// The dead-letter topic: as it is, if share groups may use it; created where the broker
/// allows it, as Kafka creates it.
async fn dead_letter_topic(broker: &Broker, topic: &str) -> Result<Arc<TopicMeta>, String> {
    if let Some(meta) = broker.shard.topics.load().by_name(topic) {
        return match meta.config.dead_letters_enabled {
            true => Ok(meta.clone()),
            false => Err(format!(
                "the topic does not have {DEAD_LETTERS_ENABLED}=true"
            )),
        };
    }
    if !broker.config.dead_letters.auto_create_topics {
        return Err(
            "the topic does not exist and [dead_letters] auto_create_topics is off".to_string(),
        );
    }
    let (mut config, mut own) = (TopicConfig::default(), TopicOverrides::new());
    for (name, value) in [(DEAD_LETTERS_ENABLED, "true"), TIMESTAMP_TYPE] {
        set_topic_config(&mut config, &mut own, name, Some(value))?;
    }
    let partitions = broker.config.default_partitions;
    match topics::create(broker, topic, partitions, own).await {
        Ok(meta) => {
            tracing::info!(
                topic,
                partitions,
                "created a share group's dead-letter topic"
            );
            Ok(meta)
        }
        Err(ErrorKind::TopicAlreadyExists) => (broker.shard.topics.load().by_name(topic))
            .cloned()
            .ok_or_else(|| "the topic was created and is gone".to_string()),
        Err(error) => Err(format!("the topic could not be created: {error:?}")),
    }
}

/// What every record of a run says of where it came from and why.
struct Context {
    topic: String,
    partition: String,
    group: String,
    deliveries: String,
    message: &'static str,
}

/// An original record's key and value.
#[derive(Default)]
struct Original {
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
}

/// One batch of the run's records from `first`, up to `last` or about `max_bytes`: each
/// record the original's key and value (where copied) and the context headers; and the
/// offset the next batch starts at.
fn batch_from(
    context: &Context,
    originals: &BTreeMap<i64, Original>,
    first: i64,
    last: i64,
    max_bytes: usize,
) -> Result<(Bytes, i64), String> {
    let now = shoal_shards::maintenance::now_ms();
    let mut builder = BatchBuilder::new(now);
    let (mut offset, mut bytes) = (first, 0);
    let empty = Original::default();
    while offset <= last {
        let original = originals.get(&offset).unwrap_or(&empty);
        let copied =
            original.key.as_ref().map_or(0, Vec::len) + original.value.as_ref().map_or(0, Vec::len);
        let size = copied + RECORD_OVERHEAD_BYTES;
        if offset > first && bytes + size > max_bytes {
            break;
        }
        bytes += size;
        let offset_text = offset.to_string();
        let headers: [RecordHeader; 6] = [
            (HEADER_TOPIC.as_bytes(), Some(context.topic.as_bytes())),
            (
                HEADER_PARTITION.as_bytes(),
                Some(context.partition.as_bytes()),
            ),
            (HEADER_OFFSET.as_bytes(), Some(offset_text.as_bytes())),
            (HEADER_GROUP.as_bytes(), Some(context.group.as_bytes())),
            (
                HEADER_DELIVERY_COUNT.as_bytes(),
                Some(context.deliveries.as_bytes()),
            ),
            (HEADER_MESSAGE.as_bytes(), Some(context.message.as_bytes())),
        ];
        builder = builder.record(
            now,
            original.key.as_deref(),
            original.value.as_deref(),
            &headers,
        );
        offset += 1;
    }
    let batch = builder.build(Codec::None).map_err(|e| e.to_string())?;
    Ok((batch.into(), offset))
}

/// The source records of the run that are still there, by offset (one that retention or
/// compaction removed gets the context headers alone, as on Kafka).
async fn read_originals(
    broker: &Broker,
    source: TopicPartition,
    run: DeadLetterRun,
) -> Result<BTreeMap<i64, Original>, String> {
    let mut originals = BTreeMap::new();
    let mut next = run.first_offset;
    while next <= run.last_offset {
        let read = PartitionFetch {
            partition: source,
            offset: next,
            max_bytes: READ_BYTES,
            read_committed: false,
            offsets_only: false,
        };
        let fetched = broker
            .shard
            .fetch(vec![read], READ_BYTES, 0, Default::default());
        let Some(result) = fetched.await.into_iter().next() else {
            break;
        };
        if let Some(error) = result.error {
            return Err(format!("the original records could not be read: {error:?}"));
        }
        let after = collect_originals(&result.records, next, run.last_offset, &mut originals)?;
        if after <= next {
            break;
        }
        next = after;
    }
    Ok(originals)
}

/// The records of `fetched` from `first` to `last` into `originals`; the offset after the
/// last batch read.
fn collect_originals(
    fetched: &[u8],
    first: i64,
    last: i64,
    originals: &mut BTreeMap<i64, Original>,
) -> Result<i64, String> {
    let (mut rest, mut after) = (fetched, first);
    while let Ok(header) = BatchHeader::parse(rest) {
        if header.size_bytes > rest.len() {
            break;
        }
        let batch = &rest[..header.size_bytes];
        rest = &rest[header.size_bytes..];
        after = after.max(header.base_offset + header.offset_count());
        if header.is_control() {
            continue;
        }
        with_keyed_records(batch, &header, INFLATED_MAX_BYTES, |records| {
            for record in records {
                let offset = header.base_offset + i64::from(record.offset_delta);
                if !(first..=last).contains(&offset) {
                    continue;
                }
                originals.insert(
                    offset,
                    Original {
                        key: record.key.map(<[u8]>::to_vec),
                        value: record.value.map(<[u8]>::to_vec),
                    },
                );
            }
        })
        .map_err(|e| format!("an original record batch could not be read: {e}"))?;
    }
    Ok(after)
}
