//! Topic and broker configs: which names Shoal honours, how values parse and validate, and
//! how they are described. Used by CreateTopics, DescribeConfigs, AlterConfigs and
//! IncrementalAlterConfigs.

pub mod alter_configs;
pub mod broker_configs;
pub mod describe_configs;
pub mod group_configs;
pub mod incremental_alter_configs;
pub mod static_broker_configs;

use shoal_coordinator::commands::AlterTopicConfig;
use shoal_coordinator::{CleanupPolicy, ErrorKind, TopicCompression, TopicConfig};

use shoal_coordinator::acl::{Operation, ResourceType};
use shoal_protocol::config_codes::ConfigResource;
use shoal_protocol::ResponseError;

use crate::context::{Broker, Call};

pub const RESOURCE_TOPIC: i8 = ConfigResource::Topic as i8;
pub const RESOURCE_BROKER: i8 = ConfigResource::Broker as i8;

/// Kafka's check for a config resource: `operation` (DESCRIBE_CONFIGS or ALTER_CONFIGS) on
/// the topic or the group, or on the cluster for a broker's configs; the refusal (code,
/// message) if any.
pub fn refusal(
    call: &Call<'_>,
    resource_type: i8,
    name: &str,
    operation: Operation,
) -> Option<(i16, String)> {
    let error = match resource_type {
        RESOURCE_TOPIC if !call.authorized(operation, ResourceType::Topic, name) => {
            ResponseError::TopicAuthorizationFailed
        }
        RESOURCE_BROKER if !call.authorized_on_cluster(operation) => {
            ResponseError::ClusterAuthorizationFailed
        }
        group_configs::RESOURCE_GROUP if !call.authorized(operation, ResourceType::Group, name) => {
            ResponseError::GroupAuthorizationFailed
        }
        _ => return None,
    };
    Some((error.code(), "Not authorized.".to_string()))
}

/// Kafka topic configs that mean nothing for a diskless partition (segments, replicas,
/// local flushing): accepted so existing tooling works, ignored, and not described.
const IGNORED_TOPIC_CONFIGS: &[&str] = &[
    "segment.jitter.ms",
    "segment.index.bytes",
    "min.insync.replicas",
    "unclean.leader.election.enable",
    "flush.messages",
    "flush.ms",
    "index.interval.bytes",
    "preallocate",
    "file.delete.delay.ms",
    "local.retention.ms",
    "local.retention.bytes",
    "message.downconversion.enable",
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
    "message.timestamp.difference.max.ms",
    "message.timestamp.before.max.ms",
    "message.timestamp.after.max.ms",
    "message.format.version",
    // Tiered storage: a diskless topic's data is in object storage already.
    "remote.storage.enable",
    "remote.log.copy.disable",
    "remote.log.delete.on.disable",
    // Recompression uses each codec's default level (Kafka's defaults too).
    "compression.gzip.level",
    "compression.lz4.level",
    "compression.zstd.level",
];

/// The topic configs Shoal honours, in the order they are described.
pub const TOPIC_CONFIGS: &[&str] = &[
    "cleanup.policy",
    "compression.type",
    "delete.retention.ms",
    "max.compaction.lag.ms",
    "max.message.bytes",
    "message.timestamp.type",
    "min.cleanable.dirty.ratio",
    "min.compaction.lag.ms",
    "retention.bytes",
    "retention.ms",
    "segment.bytes",
    "segment.ms",
];

/// `cleanup.policy` as Kafka takes it: a list of `delete` and `compact`, at least one.
pub fn parse_cleanup_policy(value: &str) -> Result<CleanupPolicy, String> {
    let (mut compact, mut delete) = (false, false);
    for item in value.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        match item {
            "compact" => compact = true,
            "delete" => delete = true,
            other => {
                return Err(format!(
                    "cleanup.policy takes delete and compact, got '{other}'"
                ))
            }
        }
    }
    CleanupPolicy::from_flags(compact, delete)
        .ok_or_else(|| "cleanup.policy must name delete, compact or both".to_string())
}

/// `min.cleanable.dirty.ratio` (a double from 0 to 1) in parts per million.
fn parse_ratio_ppm(value: &str) -> Result<i32, String> {
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|r| (0.0..=1.0).contains(r))
        .map(|r| (r * 1_000_000.0).round() as i32)
        .ok_or_else(|| format!("min.cleanable.dirty.ratio must be from 0 to 1, got '{value}'"))
}

/// Parts per million as Kafka prints the double (0.5, 0.01, 1.0).
fn ratio_name(ppm: i32) -> String {
    let ratio = ppm as f64 / 1_000_000.0;
    if ratio.fract() == 0.0 {
        format!("{ratio:.1}")
    } else {
        ratio.to_string()
    }
}

/// Sets `name` to `value` (None: back to the default) in `config`, or says why not.
pub fn set_topic_config(
    config: &mut TopicConfig,
    name: &str,
    value: Option<&str>,
) -> Result<(), String> {
    let defaults = TopicConfig::default();
    let compaction = defaults.compaction;
    let long = |min: i64| -> Result<Option<i64>, String> {
        value
            .map(|v| {
                v.trim()
                    .parse::<i64>()
                    .ok()
                    .filter(|n| *n >= min)
                    .ok_or_else(|| format!("{name} must be an integer >= {min}, got '{v}'"))
            })
            .transpose()
    };
    match name {
        "retention.ms" => config.retention_ms = long(-1)?.unwrap_or(defaults.retention_ms),
        "retention.bytes" => config.retention_bytes = long(-1)?.unwrap_or(defaults.retention_bytes),
        "max.message.bytes" => {
            let v = long(0)?.unwrap_or(defaults.max_message_bytes as i64);
            config.max_message_bytes = i32::try_from(v)
                .map_err(|_| format!("max.message.bytes must fit in 32 bits, got {v}"))?;
        }
        "message.timestamp.type" => {
            config.log_append_time = match value.map(str::trim) {
                None | Some("CreateTime") => false,
                Some("LogAppendTime") => true,
                Some(other) => {
                    return Err(format!(
                        "message.timestamp.type must be CreateTime or LogAppendTime, got '{other}'"
                    ))
                }
            }
        }
        "cleanup.policy" => {
            config.cleanup = match value {
                None => CleanupPolicy::Delete,
                Some(v) => parse_cleanup_policy(v)?,
            }
        }
        "delete.retention.ms" => {
            config.compaction.delete_retention_ms =
                long(0)?.unwrap_or(compaction.delete_retention_ms)
        }
        "min.compaction.lag.ms" => {
            config.compaction.min_compaction_lag_ms =
                long(0)?.unwrap_or(compaction.min_compaction_lag_ms)
        }
        "max.compaction.lag.ms" => {
            config.compaction.max_compaction_lag_ms =
                long(1)?.unwrap_or(compaction.max_compaction_lag_ms)
        }
        "min.cleanable.dirty.ratio" => {
            config.compaction.min_cleanable_dirty_ratio_ppm = match value {
                None => compaction.min_cleanable_dirty_ratio_ppm,
                Some(v) => parse_ratio_ppm(v)?,
            }
        }
        "segment.ms" => config.compaction.segment_ms = long(1)?.unwrap_or(compaction.segment_ms),
        "segment.bytes" => {
            let v = long(14)?.unwrap_or(compaction.segment_bytes);
            config.compaction.segment_bytes = i32::try_from(v)
                .map_err(|_| format!("segment.bytes must fit in 32 bits, got {v}"))?
                as i64;
        }
        "compression.type" => {
            config.compression = match value.map(str::trim) {
                None => TopicCompression::Producer,
                Some(v) => TopicCompression::from_name(v).ok_or_else(|| {
                    format!(
                        "compression.type must be one of producer, uncompressed, gzip, snappy, \
                         lz4, zstd, got '{v}'"
                    )
                })?,
            }
        }
        _ if IGNORED_TOPIC_CONFIGS.contains(&name) => {}
        _ => return Err(format!("Unknown topic config name: {name}")),
    }
    Ok(())
}

/// A topic config's current value as Kafka spells it, and whether it is the default.
pub fn topic_config_value(config: &TopicConfig, name: &str) -> Option<(String, bool)> {
    let defaults = TopicConfig::default();
    let (c, d) = (&config.compaction, &defaults.compaction);
    let long_value = |value: i64, default: i64| (value.to_string(), value == default);
    let (value, default) = match name {
        "retention.ms" => (
            config.retention_ms.to_string(),
            config.retention_ms == defaults.retention_ms,
        ),
        "retention.bytes" => (
            config.retention_bytes.to_string(),
            config.retention_bytes == defaults.retention_bytes,
        ),
        "max.message.bytes" => (
            config.max_message_bytes.to_string(),
            config.max_message_bytes == defaults.max_message_bytes,
        ),
        "message.timestamp.type" => (
            if config.log_append_time {
                "LogAppendTime"
            } else {
                "CreateTime"
            }
            .to_string(),
            !config.log_append_time,
        ),
        "cleanup.policy" => (
            config.cleanup.name().to_string(),
            config.cleanup == defaults.cleanup,
        ),
        "delete.retention.ms" => long_value(c.delete_retention_ms, d.delete_retention_ms),
        "min.compaction.lag.ms" => long_value(c.min_compaction_lag_ms, d.min_compaction_lag_ms),
        "max.compaction.lag.ms" => long_value(c.max_compaction_lag_ms, d.max_compaction_lag_ms),
        "min.cleanable.dirty.ratio" => (
            ratio_name(c.min_cleanable_dirty_ratio_ppm),
            c.min_cleanable_dirty_ratio_ppm == d.min_cleanable_dirty_ratio_ppm,
        ),
        "segment.ms" => long_value(c.segment_ms, d.segment_ms),
        "segment.bytes" => long_value(c.segment_bytes, d.segment_bytes),
        "compression.type" => (
            config.compression.name().to_string(),
            config.compression == defaults.compression,
        ),
        _ => return None,
    };
    Some((value, default))
}

/// Replaces a topic's settings in the coordinator.
pub async fn store_topic_config(
    broker: &Broker,
    name: &str,
    config: TopicConfig,
) -> Result<(), ErrorKind> {
    let request = AlterTopicConfig {
        name: name.to_string(),
        config,
    };
    match broker.shard.coordinator.run(request).await {
        Ok(result) => result,
        _ => Err(ErrorKind::NotAvailable),
    }
}
