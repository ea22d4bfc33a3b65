//! `[dead_letters]`: which topics share groups may use as dead-letter queues (KIP-1191).

use serde::{Deserialize, Serialize};

/// Kafka's `errors.deadletterqueue.*` broker settings for share groups' dead-letter topics.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct DeadLettersConfig {
    /// A group's dead-letter topic must start with this (Kafka's
    /// `errors.deadletterqueue.topic.name.prefix`), so records the broker copies cannot be
    /// steered onto any topic; "" allows any name.
    pub topic_prefix: String,
    /// Whether a group's dead-letter topic that does not exist is created, with
    /// `default_partitions` (Kafka's `errors.deadletterqueue.auto.create.topics.enable`).
    pub auto_create_topics: bool,
}

impl Default for DeadLettersConfig {
    /// Kafka 4.4's defaults.
    fn default() -> Self {
        DeadLettersConfig {
            topic_prefix: "dlq.".to_string(),
            auto_create_topics: false,
        }
    }
}
