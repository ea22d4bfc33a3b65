//! The BROKER config resource: this broker's configs (resource name: its id) or the cluster
//! default (name ""). The config file's settings are described read-only; the dynamic ones
//! (`dynamic_configs`) are altered here, stored in the coordinator and put into effect; the
//! topic defaults (`log.retention.ms`, `message.max.bytes`, ...: the topic config table's
//! `broker_default`) are altered cluster-wide only, and the coordinator puts them into effect
//! on every topic that does not set them itself.

use shoal_coordinator::commands::AlterBrokerConfig;
use shoal_protocol::messages::describe_configs_response::DescribeConfigsResourceResult;
use shoal_protocol::ResponseError;

use shoal_protocol::config_codes::{ConfigSource, ConfigType};

use super::described::described;
use super::static_broker_configs::{static_broker_config, STATIC_BROKER_CONFIGS};
use super::{refusal, RESOURCE_BROKER};
use crate::context::{Broker, Call};
use crate::dynamic_configs::catalogue::{effective, SSL_FILES};
use crate::dynamic_configs::{check_value, dynamic_config, DYNAMIC_CONFIGS, WITHOUT_EFFECT};
use crate::security::TlsServer;
use shoal_coordinator::acl::Operation;
use shoal_coordinator::topic_configs::{default_value, topic_default, TOPIC_CONFIGS};
use shoal_coordinator::TopicConfig;

/// Settings of the config file that exist in Kafka too but are read at start only.
const STATIC_ONLY: &[&str] = &[
    "advertised.listeners",
    "listener.security.protocol.map",
    "listeners",
    "log.dir",
    "log.dirs",
    "num.io.threads",
    "num.network.threads",
    "queued.max.request.bytes",
];

/// Attempts at a change when another broker changes the same configs at once.
const ALTER_ATTEMPTS: usize = 5;

/// Which broker a resource name means: None for the cluster default (""), else this broker
/// (Kafka answers a name that is neither INVALID_REQUEST; clients send each broker its own).
pub fn resource_broker(broker: &Broker, name: &str) -> Result<Option<i32>, (i16, String)> {
    let node_id = broker.config.node_id;
    match name {
        "" => Ok(None),
        _ if name.parse::<i32>() == Ok(node_id) => Ok(Some(node_id)),
        _ => Err((
            ResponseError::InvalidRequest.code(),
            format!(
                "Unexpected broker id, expected {node_id} or empty string, but received {name}"
            ),
        )),
    }
}

/// Whether the named configs may be set on `target` (None: the cluster-wide default): none
/// only the config file sets, and topic defaults only cluster-wide.
fn settable(named: &[&str], target: Option<i32>) -> Result<(), (i16, String)> {
    let read_only: Vec<&str> = named.iter().copied().filter(|n| is_file_only(n)).collect();
    if !read_only.is_empty() {
        return Err((
            ResponseError::InvalidRequest.code(),
            format!(
                "Cannot update these configs dynamically: {} (set them in the config file and \
                 restart)",
                read_only.join(", ")
            ),
        ));
    }
    let per_broker: Vec<&str> = named
        .iter()
        .copied()
        .filter(|n| target.is_some() && topic_default(n).is_some())
        .collect();
    if !per_broker.is_empty() {
        // Every broker serves every partition here: a topic default set on one broker would
        // hold for some produces and not others.
        return Err((
            ResponseError::InvalidRequest.code(),
            format!(
                "{} can be set cluster-wide only (the default broker resource: kafka-configs \
                 --entity-type brokers --entity-default)",
                per_broker.join(", ")
            ),
        ));
    }
    Ok(())
}

/// Changes a broker's (or the default's) dynamic configs with `change`, which is given what
/// is stored and returns the whole new set: names checked (a config of the file only is
/// INVALID_REQUEST, as Kafka answers for configs it cannot update dynamically; an unknown one
/// INVALID_CONFIG), values checked, stored unless `validate_only`, then put into effect.
pub async fn alter_broker_configs(
    call: &Call<'_>,
    name: &str,
    validate_only: bool,
    change: impl Fn(&[(String, String)]) -> Result<Vec<(String, String)>, String>,
    named: &[&str],
) -> Result<(), (i16, String)> {
    if let Some(refused) = refusal(call, RESOURCE_BROKER, name, Operation::AlterConfigs) {
        return Err(refused);
    }
    let broker = call.broker;
    let target = resource_broker(broker, name)?;
    settable(named, target)?;
    let invalid = |message: String| (ResponseError::InvalidConfig.code(), message);
    let names_tls_files = named.iter().any(|n| SSL_FILES.contains(n));
    let mut stored = broker.shard.topics.load().broker_configs(target).to_vec();
    for _ in 0..ALTER_ATTEMPTS {
        let mut configs = change(&stored).map_err(invalid)?;
        configs.sort();
        for (config, value) in &configs {
            check_value(&broker.config, config, value).map_err(invalid)?;
        }
        if names_tls_files {
            check_tls_files(broker, target, &configs)
                .await
                .map_err(invalid)?;
        }
        if validate_only {
            return Ok(());
        }
        let request = AlterBrokerConfig {
            broker: target,
            expected: stored,
            configs,
        };
        match broker.shard.coordinator.run(request).await {
            Ok(Ok(())) => {
                let view = broker.shard.topics.load();
                match names_tls_files {
                    true => broker.live.apply_rereading_tls(&view),
                    false => broker.live.apply(&view),
                }
                return Ok(());
            }
            Ok(Err(now)) => stored = now,
            Err(_) => {
                return Err((
                    ResponseError::CoordinatorNotAvailable.code(),
                    "The coordinator is not available.".to_string(),
                ))
            }
        }
    }
    Err((
        ResponseError::RequestTimedOut.code(),
        "The broker's configs kept changing; try again.".to_string(),
    ))
}

/// Whether the TLS files the new configs name load, with the ones they leave as they are.
async fn check_tls_files(
    broker: &Broker,
    target: Option<i32>,
    configs: &[(String, String)],
) -> Result<(), String> {
    let Some(tls) = broker.live.tls() else {
        return Err("This broker has no SSL or SASL_SSL listener.".to_string());
    };
    let view = broker.shard.topics.load();
    let files = match target {
        Some(_) => broker.live.tls_files(configs, view.broker_configs(None)),
        None => broker
            .live
            .tls_files(view.broker_configs(Some(broker.config.node_id)), configs),
    };
    let settings = tls.with_files(&files);
    let loaded = glommio::executor()
        .spawn_blocking(move || TlsServer::check(&settings))
        .await;
    loaded.map_err(|e| format!("The TLS files do not load: {e}"))
}

/// A name the config file sets that cannot change at run time.
fn is_file_only(name: &str) -> bool {
    dynamic_config(name).is_none()
        && !WITHOUT_EFFECT.contains(&name)
        && (STATIC_ONLY.contains(&name) || static_broker_config(name).is_some())
}

/// DescribeConfigs of a broker resource: each config with its source and, if asked, its
/// synonyms in Kafka's order of precedence.
pub fn describe(
    broker: &Broker,
    name: &str,
    wanted: impl Fn(&str) -> bool,
    synonyms: bool,
) -> Result<Vec<DescribeConfigsResourceResult>, (i16, String)> {
    let target = resource_broker(broker, name)?;
    let view = broker.shard.topics.load();
    let default = view.broker_configs(None);
    let mut configs = Vec::new();
    let Some(node_id) = target else {
        // The cluster default: only what is set there, as Kafka describes it.
        for (config, value) in default.iter().filter(|(n, _)| wanted(n)) {
            let found = [(ConfigSource::DynamicDefaultBroker, value.clone())];
            configs.push(described(
                config,
                &found,
                false,
                config_type(config),
                synonyms,
            ));
        }
        return Ok(configs);
    };
    let own = view.broker_configs(Some(node_id));
    configs.extend(described_static(broker, &wanted, synonyms));
    configs.extend(described_topic_defaults(default, &wanted, synonyms));
    let file = &broker.config;
    let file_default = crate::config::BrokerConfig::default();
    for config in DYNAMIC_CONFIGS.iter().filter(|c| wanted(c.name)) {
        let in_file = (config.file_value)(file);
        let by_default = (config.file_value)(&file_default);
        let mut found = dynamic_levels(config.name, own, default);
        if in_file != by_default {
            found.push((ConfigSource::StaticBroker, in_file));
        }
        found.push((ConfigSource::Default, by_default));
        // What is in effect comes first (a stored value out of range is passed over).
        let value = effective(file, config, own, default);
        if let Some(at) = found.iter().position(|(_, v)| *v == value) {
            found.drain(..at);
        }
        configs.push(described(
            config.name,
            &found,
            false,
            config.config_type,
            synonyms,
        ));
    }
    for config in WITHOUT_EFFECT.iter().filter(|c| wanted(c)) {
        let found = dynamic_levels(config, own, default);
        if !found.is_empty() {
            configs.push(described(
                config,
                &found,
                false,
                ConfigType::String,
                synonyms,
            ));
        }
    }
    Ok(configs)
}

/// The topic defaults, each set cluster-wide or Kafka's.
fn described_topic_defaults(
    default: &[(String, String)],
    wanted: &impl Fn(&str) -> bool,
    synonyms: bool,
) -> Vec<DescribeConfigsResourceResult> {
    let wanted = TOPIC_CONFIGS
        .iter()
        .filter_map(|d| Some((d, d.broker_default?)))
        .filter(|(_, name)| wanted(name));
    wanted
        .map(|(def, name)| {
            let mut found = Vec::with_capacity(2);
            if let Some(value) = default_value(def, default) {
                found.push((ConfigSource::DynamicDefaultBroker, value.to_string()));
            }
            found.push((ConfigSource::Default, def.value_in(&TopicConfig::default())));
            described(name, &found, false, def.config_type, synonyms)
        })
        .collect()
}

/// The config file's settings, read-only.
fn described_static(
    broker: &Broker,
    wanted: &impl Fn(&str) -> bool,
    synonyms: bool,
) -> Vec<DescribeConfigsResourceResult> {
    let wanted = STATIC_BROKER_CONFIGS.iter().filter(|c| wanted(c.name));
    wanted
        .map(|c| {
            let found = [(ConfigSource::StaticBroker, (c.value)(&broker.config))];
            described(c.name, &found, true, c.config_type, synonyms)
        })
        .collect()
}

/// Where `name` is set dynamically, most precedent first: (source, value).
fn dynamic_levels(
    name: &str,
    own: &[(String, String)],
    default: &[(String, String)],
) -> Vec<(ConfigSource, String)> {
    [
        (ConfigSource::DynamicBroker, own),
        (ConfigSource::DynamicDefaultBroker, default),
    ]
    .into_iter()
    .filter_map(|(source, set)| {
        let (_, value) = set.iter().find(|(n, _)| n == name)?;
        Some((source, value.clone()))
    })
    .collect()
}

/// A broker config's Kafka type: its table's; the configs taken without effect are strings.
fn config_type(name: &str) -> ConfigType {
    let topic = topic_default(name).map(|def| def.config_type);
    let fixed = static_broker_config(name).map(|c| c.config_type);
    dynamic_config(name)
        .map(|c| c.config_type)
        .or(topic)
        .or(fixed)
        .unwrap_or(ConfigType::String)
}
