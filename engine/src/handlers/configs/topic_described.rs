//! Where a topic config's value comes from, as DescribeConfigs and CreateTopics report it:
//! the topic's own setting, the cluster-wide default (a dynamic broker config), or Kafka's.

use shoal_coordinator::topic_configs::{default_value, TopicConfigDef, TopicOverrides};
use shoal_coordinator::TopicConfig;
use shoal_protocol::config_codes::ConfigSource;

/// Each level that sets `def` for a topic, in Kafka's order of precedence (the first is in
/// effect): (source, the name it is set under there, value).
pub fn topic_config_found(
    def: &TopicConfigDef,
    config: &TopicConfig,
    overrides: &TopicOverrides,
    defaults: &[(String, String)],
) -> Vec<(ConfigSource, &'static str, String)> {
    let mut found = Vec::with_capacity(3);
    if overrides.contains_key(def.name) {
        found.push((ConfigSource::DynamicTopic, def.name, def.value_in(config)));
    }
    if let (Some(value), Some(broker_default)) = (default_value(def, defaults), def.broker_default)
    {
        let source = ConfigSource::DynamicDefaultBroker;
        found.push((source, broker_default, value.to_string()));
    }
    let kafka_default = def.value_in(&TopicConfig::default());
    found.push((
        ConfigSource::Default,
        def.broker_default.unwrap_or(def.name),
        kafka_default,
    ));
    found
}
