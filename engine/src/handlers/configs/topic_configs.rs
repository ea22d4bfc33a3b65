//! The topic configs Shoal honours, one table entry each (Kafka's `ConfigDef` in spirit):
//! name, Kafka type, how a value is checked and applied (None: back to the default) and how
//! the value in effect is printed. CreateTopics, DescribeConfigs, AlterConfigs,
//! IncrementalAlterConfigs and the mirror's config sync all go through it.

use shoal_coordinator::{CleanupPolicy, TopicCompression, TopicConfig};
use shoal_protocol::config_codes::ConfigType;

/// One topic config.
pub struct TopicConfigDef {
    pub name: &'static str,
    pub config_type: ConfigType,
    /// What it does, for `docs/configs.md`.
    pub doc: &'static str,
    /// Checks `value` and applies it; None sets the default.
    set: fn(&mut TopicConfig, Option<&str>) -> Result<(), String>,
    /// The value in effect, as Kafka prints it.
    value: fn(&TopicConfig) -> String,
}

/// In the order they are described.
pub const TOPIC_CONFIGS: &[TopicConfigDef] = &[
    TopicConfigDef {
        name: "cleanup.policy",
        config_type: ConfigType::List,
        doc: "delete (retention removes old records), compact (the latest record of each key is kept), or both.",
        set: |c, v| {
            c.cleanup = v.map_or(Ok(CleanupPolicy::Delete), parse_cleanup_policy)?;
            Ok(())
        },
        value: |c| c.cleanup.name().to_string(),
    },
    TopicConfigDef {
        name: "compression.type",
        config_type: ConfigType::String,
        doc: "The codec batches are stored with: producer keeps the producer's; uncompressed, gzip, snappy, lz4 or zstd recompress.",
        set: |c, v| {
            c.compression = match v.map(str::trim) {
                None => TopicCompression::Producer,
                Some(v) => TopicCompression::from_name(v).ok_or_else(|| {
                    format!(
                        "compression.type must be one of producer, uncompressed, gzip, snappy, \
                         lz4, zstd, got '{v}'"
                    )
                })?,
            };
            Ok(())
        },
        value: |c| c.compression.name().to_string(),
    },
    TopicConfigDef {
        name: "delete.retention.ms",
        config_type: ConfigType::Long,
        doc: "How long compaction keeps a tombstone (a null value) after it is compacted, so consumers reading behind see it.",
        set: |c, v| {
            let default = TopicConfig::default().compaction.delete_retention_ms;
            c.compaction.delete_retention_ms =
                long("delete.retention.ms", v, 0)?.unwrap_or(default);
            Ok(())
        },
        value: |c| c.compaction.delete_retention_ms.to_string(),
    },
    TopicConfigDef {
        name: "max.compaction.lag.ms",
        config_type: ConfigType::Long,
        doc: "The longest a record waits before compaction takes it, however clean the partition is.",
        set: |c, v| {
            let default = TopicConfig::default().compaction.max_compaction_lag_ms;
            c.compaction.max_compaction_lag_ms =
                long("max.compaction.lag.ms", v, 1)?.unwrap_or(default);
            Ok(())
        },
        value: |c| c.compaction.max_compaction_lag_ms.to_string(),
    },
    TopicConfigDef {
        name: "max.message.bytes",
        config_type: ConfigType::Int,
        doc: "The largest record batch the topic takes, after compression; larger ones get MESSAGE_TOO_LARGE.",
        set: |c, v| {
            let default = TopicConfig::default().max_message_bytes;
            c.max_message_bytes = int("max.message.bytes", v, 0)?.unwrap_or(default);
            Ok(())
        },
        value: |c| c.max_message_bytes.to_string(),
    },
    TopicConfigDef {
        name: "message.timestamp.type",
        config_type: ConfigType::String,
        doc: "CreateTime keeps the producer's timestamps; LogAppendTime stamps each batch with the broker's time.",
        set: |c, v| {
            c.log_append_time = match v.map(str::trim) {
                None | Some("CreateTime") => false,
                Some("LogAppendTime") => true,
                Some(other) => {
                    return Err(format!(
                        "message.timestamp.type must be CreateTime or LogAppendTime, got '{other}'"
                    ))
                }
            };
            Ok(())
        },
        value: |c| match c.log_append_time {
            true => "LogAppendTime".to_string(),
            false => "CreateTime".to_string(),
        },
    },
    TopicConfigDef {
        name: "min.cleanable.dirty.ratio",
        config_type: ConfigType::Double,
        doc: "The share of a compacted partition's cleanable bytes not yet compacted that makes it worth compacting.",
        set: |c, v| {
            let default = TopicConfig::default()
                .compaction
                .min_cleanable_dirty_ratio_ppm;
            c.compaction.min_cleanable_dirty_ratio_ppm = v.map_or(Ok(default), parse_ratio_ppm)?;
            Ok(())
        },
        value: |c| ratio_name(c.compaction.min_cleanable_dirty_ratio_ppm),
    },
    TopicConfigDef {
        name: "min.compaction.lag.ms",
        config_type: ConfigType::Long,
        doc: "The least a record waits before compaction may take it.",
        set: |c, v| {
            let default = TopicConfig::default().compaction.min_compaction_lag_ms;
            c.compaction.min_compaction_lag_ms =
                long("min.compaction.lag.ms", v, 0)?.unwrap_or(default);
            Ok(())
        },
        value: |c| c.compaction.min_compaction_lag_ms.to_string(),
    },
    TopicConfigDef {
        name: "retention.bytes",
        config_type: ConfigType::Long,
        doc: "The most bytes a partition keeps; older batches are deleted past it (-1: no limit).",
        set: |c, v| {
            let default = TopicConfig::default().retention_bytes;
            c.retention_bytes = long("retention.bytes", v, -1)?.unwrap_or(default);
            Ok(())
        },
        value: |c| c.retention_bytes.to_string(),
    },
    TopicConfigDef {
        name: "retention.ms",
        config_type: ConfigType::Long,
        doc: "How long a batch is kept after its newest timestamp (-1: forever).",
        set: |c, v| {
            let default = TopicConfig::default().retention_ms;
            c.retention_ms = long("retention.ms", v, -1)?.unwrap_or(default);
            Ok(())
        },
        value: |c| c.retention_ms.to_string(),
    },
    TopicConfigDef {
        name: "segment.bytes",
        config_type: ConfigType::Int,
        doc: "The size at which a compacted partition's batches are grouped for compaction (Kafka's segment, here a rewrite unit).",
        set: |c, v| {
            let default = TopicConfig::default().compaction.segment_bytes;
            c.compaction.segment_bytes = int("segment.bytes", v, 14)?.map_or(default, i64::from);
            Ok(())
        },
        value: |c| c.compaction.segment_bytes.to_string(),
    },
    TopicConfigDef {
        name: "segment.ms",
        config_type: ConfigType::Long,
        doc: "The age at which a compacted partition's newest batches join a rewrite unit though it is not full.",
        set: |c, v| {
            let default = TopicConfig::default().compaction.segment_ms;
            c.compaction.segment_ms = long("segment.ms", v, 1)?.unwrap_or(default);
            Ok(())
        },
        value: |c| c.compaction.segment_ms.to_string(),
    },
];

/// Kafka topic configs that mean nothing for a diskless partition (segments, replicas,
/// local flushing): accepted so existing tooling works, ignored, and not described.
pub const IGNORED_TOPIC_CONFIGS: &[&str] = &[
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

pub fn topic_config(name: &str) -> Option<&'static TopicConfigDef> {
    TOPIC_CONFIGS.iter().find(|c| c.name == name)
}

/// Checks and applies one config to `config` (None: its default). Kafka's configs that mean
/// nothing for a diskless topic are taken and ignored; unknown names are refused.
pub fn set_topic_config(
    config: &mut TopicConfig,
    name: &str,
    value: Option<&str>,
) -> Result<(), String> {
    match topic_config(name) {
        Some(def) => (def.set)(config, value),
        None if IGNORED_TOPIC_CONFIGS.contains(&name) => Ok(()),
        None => Err(format!("Unknown topic config name: {name}")),
    }
}

/// A topic config's current value as Kafka spells it, and whether it is the default.
pub fn topic_config_value(config: &TopicConfig, name: &str) -> Option<(String, bool)> {
    let def = topic_config(name)?;
    let value = (def.value)(config);
    let default = value == (def.value)(&TopicConfig::default());
    Some((value, default))
}

/// A whole number `>= min`, if given.
fn long(name: &str, value: Option<&str>, min: i64) -> Result<Option<i64>, String> {
    value
        .map(|v| {
            v.trim()
                .parse::<i64>()
                .ok()
                .filter(|n| *n >= min)
                .ok_or_else(|| format!("{name} must be an integer >= {min}, got '{v}'"))
        })
        .transpose()
}

/// The same, within 32 bits (Kafka's INT configs).
fn int(name: &str, value: Option<&str>, min: i64) -> Result<Option<i32>, String> {
    long(name, value, min)?
        .map(|v| i32::try_from(v).map_err(|_| format!("{name} must fit in 32 bits, got {v}")))
        .transpose()
}

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
