//! Dynamic broker configs (Kafka's BROKER config resource), kept whole per broker and for the
//! cluster-wide default: what names mean and which values are valid is the engine's business
//! (and the topic config table's, for the topic defaults); the coordinator keeps them, checks
//! their shape when read, and publishes them. The records and their checks; the state's part
//! is `state::broker_configs`.

use std::collections::BTreeMap;

use shoal_protocol::records::{ShoalBrokerConfig, ShoalBrokerConfigRecord};

/// The broker id that stands for the cluster-wide default (resource name "").
pub const CLUSTER_DEFAULT: i32 = -1;

/// Configs by broker id (`CLUSTER_DEFAULT` for the default), each as (name, value).
pub type BrokerConfigs = BTreeMap<i32, Vec<(String, String)>>;

/// One broker's (or the default's) configs, whole (none: the config file's values again).
pub(crate) fn broker_config_record(
    broker_id: i32,
    configs: &[(String, String)],
) -> ShoalBrokerConfigRecord {
    ShoalBrokerConfigRecord {
        broker_id,
        configs: configs
            .iter()
            .map(|(name, value)| ShoalBrokerConfig {
                name: name.clone(),
                value: value.clone(),
            })
            .collect(),
    }
}

/// A record read from the log or a snapshot: a broker id or the default, named configs, each
/// name once.
pub(crate) fn check_broker_config(record: &ShoalBrokerConfigRecord) -> Result<(), String> {
    if record.broker_id < CLUSTER_DEFAULT {
        return Err(format!("broker config for broker id {}", record.broker_id));
    }
    let mut names: Vec<&str> = record.configs.iter().map(|c| c.name.as_str()).collect();
    if names.iter().any(|n| n.is_empty()) {
        return Err("a broker config without a name".to_string());
    }
    names.sort_unstable();
    if names.windows(2).any(|w| w[0] == w[1]) {
        return Err("a broker config named twice".to_string());
    }
    Ok(())
}
