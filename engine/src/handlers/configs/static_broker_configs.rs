//! The broker settings DescribeConfigs reports read-only: the config file's, read at start
//! (the ones that may change at run time are `dynamic_configs`), each once with Kafka's name
//! and Kafka's type for it, so a client that reads `ConfigEntry.type()` is told what Kafka
//! would tell it.

use shoal_protocol::config_codes::ConfigType;

use crate::config::BrokerConfig;

/// A config file setting under its Kafka name.
pub struct StaticBrokerConfig {
    pub name: &'static str,
    pub config_type: ConfigType,
    /// What it is, for `docs/configs.md`.
    pub doc: &'static str,
    /// Its value, as Kafka prints it.
    pub value: fn(&BrokerConfig) -> String,
}

/// In the order DescribeConfigs lists them.
pub const STATIC_BROKER_CONFIGS: &[StaticBrokerConfig] = &[
    StaticBrokerConfig {
        name: "auto.create.topics.enable",
        config_type: ConfigType::Boolean,
        doc: "Whether Metadata for an unknown topic creates it (`auto_create_topics` in the config file).",
        value: |c| c.auto_create_topics.to_string(),
    },
    StaticBrokerConfig {
        name: "broker.id",
        config_type: ConfigType::Int,
        doc: "This broker's id (`node_id`).",
        value: |c| c.node_id.to_string(),
    },
    StaticBrokerConfig {
        name: "delegation.token.expiry.check.interval.ms",
        config_type: ConfigType::Long,
        doc: "How often expired delegation tokens are removed (`[delegation_token]`).",
        value: |c| c.delegation_token.expiry_check_interval_ms.to_string(),
    },
    StaticBrokerConfig {
        name: "delegation.token.expiry.time.ms",
        config_type: ConfigType::Long,
        doc: "A delegation token expires this long after it was made or last renewed (`[delegation_token]`).",
        value: |c| c.delegation_token.expiry_time_ms.to_string(),
    },
    StaticBrokerConfig {
        name: "delegation.token.max.lifetime.ms",
        config_type: ConfigType::Long,
        doc: "No delegation token outlives this, however often renewed (`[delegation_token]`).",
        value: |c| c.delegation_token.max_lifetime_ms.to_string(),
    },
    StaticBrokerConfig {
        name: "errors.deadletterqueue.auto.create.topics.enable",
        config_type: ConfigType::Boolean,
        doc: "Whether a share group's dead-letter topic that does not exist is created (`[dead_letters] auto_create_topics`).",
        value: |c| c.dead_letters.auto_create_topics.to_string(),
    },
    StaticBrokerConfig {
        name: "errors.deadletterqueue.topic.name.prefix",
        config_type: ConfigType::String,
        doc: "What a share group's dead-letter topic must start with; empty for any name (`[dead_letters] topic_prefix`).",
        value: |c| c.dead_letters.topic_prefix.clone(),
    },
    StaticBrokerConfig {
        name: "group.initial.rebalance.delay.ms",
        config_type: ConfigType::Int,
        doc: "How long a new classic group waits for more members before its first rebalance (`[groups]`).",
        value: |c| c.groups.initial_rebalance_delay_ms.to_string(),
    },
    StaticBrokerConfig {
        name: "group.max.session.timeout.ms",
        config_type: ConfigType::Int,
        doc: "The longest session timeout a member may ask for (`[groups]`).",
        value: |c| c.groups.max_session_timeout_ms.to_string(),
    },
    StaticBrokerConfig {
        name: "group.max.size",
        config_type: ConfigType::Int,
        doc: "The most members a group takes (`[groups]`).",
        value: |c| c.groups.max_size.to_string(),
    },
    StaticBrokerConfig {
        name: "group.min.session.timeout.ms",
        config_type: ConfigType::Int,
        doc: "The shortest session timeout a member may ask for (`[groups]`).",
        value: |c| c.groups.min_session_timeout_ms.to_string(),
    },
    StaticBrokerConfig {
        name: "node.id",
        config_type: ConfigType::Int,
        doc: "This broker's id (`node_id`).",
        value: |c| c.node_id.to_string(),
    },
    StaticBrokerConfig {
        name: "num.partitions",
        config_type: ConfigType::Int,
        doc: "Partitions of a topic created without a count (`default_partitions`).",
        value: |c| c.default_partitions.to_string(),
    },
    StaticBrokerConfig {
        name: "offsets.retention.minutes",
        config_type: ConfigType::Int,
        doc: "How long a group's committed offsets outlive its last member (`[groups]`).",
        value: |c| (c.groups.offsets_retention_ms / 60_000).to_string(),
    },
    StaticBrokerConfig {
        name: "socket.request.max.bytes",
        config_type: ConfigType::Int,
        doc: "The largest request frame a connection may send (`max_request_bytes`).",
        value: |c| c.max_request_bytes.to_string(),
    },
];

pub fn static_broker_config(name: &str) -> Option<&'static StaticBrokerConfig> {
    STATIC_BROKER_CONFIGS.iter().find(|c| c.name == name)
}
