//! The topic configs Shoal honours, one table entry each (Kafka's `ConfigDef` in spirit):
//! name, the broker config that is its cluster-wide default, Kafka type, how a value is
//! checked and applied (None: back to Kafka's default) and how the value in effect is
//! printed. CreateTopics, DescribeConfigs, AlterConfigs, IncrementalAlterConfigs, the
//! cluster-wide defaults and the mirror's config sync all go through it; it lives in the
//! coordinator because the coordinator resolves a topic's config when a default changes.

use std::collections::BTreeMap;

use shoal_protocol::config_codes::ConfigType;

use crate::records::{CleanupPolicy, SubjectNameStrategy, TopicCompression, TopicConfig};

/// One topic config.
pub struct TopicConfigDef {
    pub name: &'static str,
    /// The broker config that sets it for every topic that does not set it itself, dynamic
    /// at the cluster default (Kafka's synonym: `log.retention.ms` for `retention.ms`); None
    /// for the configs Kafka's brokers have no default for (Confluent's schema validation).
    pub broker_default: Option<&'static str>,
    pub config_type: ConfigType,
    /// What it does, for `docs/configs.md`.
    pub doc: &'static str,
    /// Checks `value` and applies it; None sets the default.
    set: fn(&mut TopicConfig, Option<&str>) -> Result<(), String>,
    /// The value in effect, as Kafka prints it.
    value: fn(&TopicConfig) -> String,
}

/// In the order they are described.
/// The topic config that gives a topic an Iceberg table (the table writer reads it too).
pub const ICEBERG_ENABLED: &str = "shoal.iceberg.enabled";
/// The topic config that lets share groups use a topic as their dead-letter queue.
pub const DEAD_LETTERS_ENABLED: &str = "errors.deadletterqueue.group.enable";

pub const TOPIC_CONFIGS: &[TopicConfigDef] = &[
    TopicConfigDef {
        name: "cleanup.policy",
        broker_default: Some("log.cleanup.policy"),
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
        broker_default: Some("compression.type"),
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
        name: "confluent.key.schema.validation",
        broker_default: None,
        config_type: ConfigType::Boolean,
        doc: "Every record's key must carry the id of a schema registered in the broker's schema registry under the key's subject (docs/schema-registry.md); others get INVALID_RECORD naming them.",
        set: |c, v| {
            c.schema_validation.key = boolean("confluent.key.schema.validation", v)?;
            Ok(())
        },
        value: |c| c.schema_validation.key.to_string(),
    },
    TopicConfigDef {
        name: "confluent.key.subject.name.strategy",
        broker_default: None,
        config_type: ConfigType::String,
        doc: "The key's subject: TopicNameStrategy (<topic>-key), RecordNameStrategy (the schema's record name) or TopicRecordNameStrategy (<topic>-<record name>), with or without the io.confluent.kafka.serializers.subject. package.",
        set: |c, v| {
            c.schema_validation.key_strategy =
                strategy("confluent.key.subject.name.strategy", v)?;
            Ok(())
        },
        value: |c| c.schema_validation.key_strategy.class_name(),
    },
    TopicConfigDef {
        name: "confluent.value.schema.validation",
        broker_default: None,
        config_type: ConfigType::Boolean,
        doc: "Every record's value must carry the id of a schema registered in the broker's schema registry under the value's subject (docs/schema-registry.md); others get INVALID_RECORD naming them.",
        set: |c, v| {
            c.schema_validation.value = boolean("confluent.value.schema.validation", v)?;
            Ok(())
        },
        value: |c| c.schema_validation.value.to_string(),
    },
    TopicConfigDef {
        name: "confluent.value.subject.name.strategy",
        broker_default: None,
        config_type: ConfigType::String,
        doc: "The value's subject, named as confluent.key.subject.name.strategy names the key's (<topic>-value for TopicNameStrategy).",
        set: |c, v| {
            c.schema_validation.value_strategy =
                strategy("confluent.value.subject.name.strategy", v)?;
            Ok(())
        },
        value: |c| c.schema_validation.value_strategy.class_name(),
    },
    TopicConfigDef {
        name: "shoal.schema.validation.decode",
        broker_default: None,
        config_type: ConfigType::Boolean,
        doc: "With confluent.key/value.schema.validation: each checked key or value must also decode with the schema its id names (Avro binary read whole, JSON the JSON Schema accepts, Protobuf as the message its indexes name); others get INVALID_RECORD naming them. Costs broker CPU on every record.",
        set: |c, v| {
            c.schema_validation.decode = boolean("shoal.schema.validation.decode", v)?;
            Ok(())
        },
        value: |c| c.schema_validation.decode.to_string(),
    },
    TopicConfigDef {
        name: ICEBERG_ENABLED,
        broker_default: None,
        config_type: ConfigType::Boolean,
        doc: "Keep an Apache Iceberg table of the topic's committed records (aborted transactions left out), written by the broker's table writer (`[iceberg]`) every commit interval, exactly once per record.",
        set: |c, v| {
            c.iceberg_enabled = boolean(ICEBERG_ENABLED, v)?;
            Ok(())
        },
        value: |c| c.iceberg_enabled.to_string(),
    },
    TopicConfigDef {
        name: DEAD_LETTERS_ENABLED,
        broker_default: None,
        config_type: ConfigType::Boolean,
        doc: "Share groups may name the topic as their dead-letter queue (`errors.deadletterqueue.topic.name`, KIP-1191): records they give up on are written to it.",
        set: |c, v| {
            c.dead_letters_enabled = boolean(DEAD_LETTERS_ENABLED, v)?;
            Ok(())
        },
        value: |c| c.dead_letters_enabled.to_string(),
    },
    TopicConfigDef {
        name: "delete.retention.ms",
        broker_default: Some("log.cleaner.delete.retention.ms"),
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
        broker_default: Some("log.cleaner.max.compaction.lag.ms"),
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
        broker_default: Some("message.max.bytes"),
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
        name: "message.timestamp.after.max.ms",
        broker_default: Some("log.message.timestamp.after.max.ms"),
        config_type: ConfigType::Long,
        doc: "How far ahead of the broker's clock a CreateTime record's timestamp may be; a batch with one further ahead gets INVALID_TIMESTAMP.",
        set: |c, v| {
            let default = TopicConfig::default().timestamp_after_max_ms;
            c.timestamp_after_max_ms =
                long("message.timestamp.after.max.ms", v, 0)?.unwrap_or(default);
            Ok(())
        },
        value: |c| c.timestamp_after_max_ms.to_string(),
    },
    TopicConfigDef {
        name: "message.timestamp.before.max.ms",
        broker_default: Some("log.message.timestamp.before.max.ms"),
        config_type: ConfigType::Long,
        doc: "How far behind the broker's clock a CreateTime record's timestamp may be; a batch with one older gets INVALID_TIMESTAMP.",
        set: |c, v| {
            let default = TopicConfig::default().timestamp_before_max_ms;
            c.timestamp_before_max_ms =
                long("message.timestamp.before.max.ms", v, 0)?.unwrap_or(default);
            Ok(())
        },
        value: |c| c.timestamp_before_max_ms.to_string(),
    },
    TopicConfigDef {
        name: "message.timestamp.type",
        broker_default: Some("log.message.timestamp.type"),
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
        broker_default: Some("log.cleaner.min.cleanable.ratio"),
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
        broker_default: Some("log.cleaner.min.compaction.lag.ms"),
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
        broker_default: Some("log.retention.bytes"),
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
        broker_default: Some("log.retention.ms"),
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
        broker_default: Some("log.segment.bytes"),
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
        broker_default: Some("log.roll.ms"),
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

impl TopicConfigDef {
    /// Whether `value` is one this config takes, and if not, why.
    pub fn check(&self, value: &str) -> Result<(), String> {
        (self.set)(&mut TopicConfig::default(), Some(value))
    }

    /// Its value in `config`, as Kafka spells it.
    pub fn value_in(&self, config: &TopicConfig) -> String {
        (self.value)(config)
    }
}

/// A mirror topic's own settings, not its source's (KIP-1279 leaves the timestamp type out;
/// how batches are stored is this cluster's business).
const NOT_MIRRORED: &[&str] = &["compression.type", "message.timestamp.type"];

/// The configs a mirror topic takes from its source (a compacted source's mirror is
/// compacted by the same policy once it is promoted).
pub fn mirrored_configs() -> impl Iterator<Item = &'static str> {
    TOPIC_CONFIGS
        .iter()
        .map(|c| c.name)
        .filter(|name| !NOT_MIRRORED.contains(name))
}

pub fn topic_config(name: &str) -> Option<&'static TopicConfigDef> {
    TOPIC_CONFIGS.iter().find(|c| c.name == name)
}

/// Checks and applies one config to `config` and records it in `own` as the topic's own
/// (a value, as Kafka prints it) or hands it back to its default (None). Kafka's configs that
/// mean nothing for a diskless topic are taken and ignored; unknown names are refused.
pub fn set_topic_config(
    config: &mut TopicConfig,
    own: &mut TopicOverrides,
    name: &str,
    value: Option<&str>,
) -> Result<(), String> {
    match topic_config(name) {
        Some(def) => {
            (def.set)(config, value)?;
            match value {
                Some(_) => own.insert(def.name.to_string(), def.value_in(config)),
                None => own.remove(def.name),
            };
            Ok(())
        }
        None if IGNORED_TOPIC_CONFIGS.contains(&name) => Ok(()),
        None => Err(format!("Unknown topic config name: {name}")),
    }
}

/// A topic config's value in `config`, as Kafka spells it.
pub fn topic_config_value(config: &TopicConfig, name: &str) -> Option<String> {
    topic_config(name).map(|def| (def.value)(config))
}

/// The configs a topic sets itself, by Kafka's name, with their values as Kafka prints them
/// (what the log stores: a config this table gains needs no new record field); every other
/// config follows its cluster-wide default, or Kafka's.
pub type TopicOverrides = BTreeMap<String, String>;

/// What a topic stored as a whole config (by Shoal before the cluster-wide defaults, or a
/// caller that has only a `TopicConfig`) sets itself: whatever differs from Kafka's default,
/// the only default there was then.
pub fn overrides_differing_from_default(config: &TopicConfig) -> TopicOverrides {
    let default = TopicConfig::default();
    TOPIC_CONFIGS
        .iter()
        .filter(|def| def.value_in(config) != def.value_in(&default))
        .map(|def| (def.name.to_string(), def.value_in(config)))
        .collect()
}

/// The topic config whose cluster-wide default is the broker config `name`.
pub fn topic_default(name: &str) -> Option<&'static TopicConfigDef> {
    TOPIC_CONFIGS
        .iter()
        .find(|c| c.broker_default == Some(name))
}

/// The value a cluster-wide default `defaults` (the cluster default's dynamic broker configs)
/// gives `def`, if it sets one that is valid.
pub fn default_value<'a>(
    def: &TopicConfigDef,
    defaults: &'a [(String, String)],
) -> Option<&'a str> {
    let broker_default = def.broker_default?;
    let (_, value) = defaults.iter().find(|(n, _)| n == broker_default)?;
    def.check(value).ok().map(|()| value.as_str())
}

/// A topic's config in effect: each config from its own value, else from the cluster-wide
/// default in `defaults`, else Kafka's. A value the table refuses (only a damaged or hostile
/// log holds one: values are checked before they are stored) counts as not set.
pub fn resolve(own: &TopicOverrides, defaults: &[(String, String)]) -> TopicConfig {
    let mut resolved = TopicConfig::default();
    for def in TOPIC_CONFIGS {
        let own_value = own.get(def.name).map(String::as_str);
        let value = own_value
            .filter(|v| def.check(v).is_ok())
            .or_else(|| default_value(def, defaults));
        // A value checked just above, or none (Kafka's default): neither is refused.
        let _ = (def.set)(&mut resolved, value);
    }
    resolved
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
/// A boolean config (None: false, Kafka's default for these).
fn boolean(name: &str, value: Option<&str>) -> Result<bool, String> {
    match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
        None | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(other) => Err(format!("{name} must be true or false, got '{other}'")),
    }
}

fn strategy(name: &str, value: Option<&str>) -> Result<SubjectNameStrategy, String> {
    match value {
        None => Ok(SubjectNameStrategy::default()),
        Some(v) => SubjectNameStrategy::parse(v).ok_or_else(|| {
            format!(
                "{name} must be TopicNameStrategy, RecordNameStrategy or \
                 TopicRecordNameStrategy, got '{v}'"
            )
        }),
    }
}

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
