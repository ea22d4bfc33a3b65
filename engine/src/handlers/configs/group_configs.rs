//! The GROUP config resource (KIP-848): a consumer-protocol group's session timeout and
//! heartbeat interval, set per group with IncrementalAlterConfigs and described with
//! DescribeConfigs; unset, the broker's `[groups]` defaults apply. Stored in the
//! coordinator's log and published to the shards with the topic catalogue.

use shoal_coordinator::commands::AlterGroupConfig;
use shoal_coordinator::{ErrorKind, TopicsView};
use shoal_protocol::config_codes::{ConfigResource, ConfigType};
use shoal_protocol::ResponseError;
use shoal_shards::groups::GroupConfig;

use crate::context::Broker;
use crate::kafka::error_codes;

pub const RESOURCE_GROUP: i8 = ConfigResource::Group as i8;
/// Kafka's GroupConfig names (the broker's defaults are `group.`-prefixed: `[groups]`).
pub const SESSION_TIMEOUT: &str = "consumer.session.timeout.ms";
pub const HEARTBEAT_INTERVAL: &str = "consumer.heartbeat.interval.ms";
/// One group config.
pub struct GroupConfigDef {
    pub name: &'static str,
    pub config_type: ConfigType,
    /// What it does, for `docs/configs.md`.
    pub doc: &'static str,
    /// The broker's default for it.
    pub default: fn(&GroupConfig) -> i64,
}

/// The group configs Shoal honours, in the order they are described (Kafka's GroupConfig
/// declares both INT).
pub const GROUP_CONFIGS: &[GroupConfigDef] = &[
    GroupConfigDef {
        name: HEARTBEAT_INTERVAL,
        config_type: ConfigType::Int,
        doc: "How often the group's members heartbeat (KIP-848 groups; `[groups] consumer_heartbeat_interval_ms` by default).",
        default: |d| d.consumer_heartbeat_interval_ms as i64,
    },
    GroupConfigDef {
        name: SESSION_TIMEOUT,
        config_type: ConfigType::Int,
        doc: "How long a member may go without a heartbeat before it leaves the group (`[groups] consumer_session_timeout_ms` by default).",
        default: |d| d.consumer_session_timeout_ms as i64,
    },
];

pub fn group_config(name: &str) -> Option<&'static GroupConfigDef> {
    GROUP_CONFIGS.iter().find(|c| c.name == name)
}

/// The broker's default for a group config (0 for a name that is not one: never asked).
fn default_of(defaults: &GroupConfig, name: &str) -> i64 {
    group_config(name).map_or(0, |c| (c.default)(defaults))
}

/// A group config as stored; before 12-03 Shoal stored them under the broker defaults'
/// `group.`-prefixed names, which are read as the same configs.
fn stored<'a>(configs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    let legacy = format!("group.{name}");
    configs
        .iter()
        .find(|(n, _)| n == name)
        .or_else(|| configs.iter().find(|(n, _)| *n == legacy))
        .map(|(_, v)| v.as_str())
}

/// A group config's value and whether it is the broker's default.
pub fn group_config_value(
    view: &TopicsView,
    defaults: &GroupConfig,
    group: &str,
    name: &str,
) -> (String, bool) {
    match stored(view.group_configs(group), name) {
        Some(value) => (value.to_string(), false),
        None => (default_of(defaults, name).to_string(), true),
    }
}

/// The group's session timeout and heartbeat interval in ms, as set or by default.
pub fn group_timeouts(view: &TopicsView, defaults: &GroupConfig, group: &str) -> (u64, i32) {
    let value = |name| {
        stored(view.group_configs(group), name)
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or_else(|| default_of(defaults, name))
    };
    let session = value(SESSION_TIMEOUT).max(1) as u64;
    let interval = value(HEARTBEAT_INTERVAL).clamp(1, i32::MAX as i64) as i32;
    (session, interval)
}

/// The group's configs after SET (`Some`) or DELETE (`None`) of each listed one, validated:
/// whole milliseconds, the session within the broker's session bounds, the interval shorter
/// than the session.
pub fn changed_group_configs(
    current: &[(String, String)],
    defaults: &GroupConfig,
    changes: &[(String, Option<String>)],
) -> Result<Vec<(String, String)>, String> {
    // Stored under legacy names: kept under Kafka's from now on.
    let mut configs: Vec<(String, String)> = GROUP_CONFIGS
        .iter()
        .filter_map(|c| Some((c.name.to_string(), stored(current, c.name)?.to_string())))
        .collect();
    for (name, value) in changes {
        if group_config(name).is_none() {
            return Err(format!("Unknown group config {name}."));
        }
        configs.retain(|(n, _)| n != name);
        if let Some(value) = value {
            let ms: i64 = value
                .trim()
                .parse()
                .map_err(|_| format!("{name} must be a whole number of milliseconds"))?;
            configs.push((name.clone(), ms.to_string()));
        }
    }
    configs.sort();
    let get = |name: &str| {
        configs
            .iter()
            .find(|(n, _)| n == name)
            .map_or(default_of(defaults, name), |(_, v)| {
                v.parse().unwrap_or_default()
            })
    };
    let (session, interval) = (get(SESSION_TIMEOUT), get(HEARTBEAT_INTERVAL));
    let (min, max) = (
        defaults.min_session_timeout_ms as i64,
        defaults.max_session_timeout_ms as i64,
    );
    if !(min..=max).contains(&session) {
        return Err(format!("{SESSION_TIMEOUT} must be within {min}..={max}"));
    }
    if interval < 1 || interval >= session {
        return Err(format!(
            "{HEARTBEAT_INTERVAL} must be at least 1 and less than {SESSION_TIMEOUT}"
        ));
    }
    Ok(configs)
}

/// IncrementalAlterConfigs on a group: validated always, stored unless `validate_only`.
pub async fn alter_group_configs(
    broker: &Broker,
    group: &str,
    changes: &[(String, Option<String>)],
    validate_only: bool,
) -> Result<(), (i16, String)> {
    let view = broker.shard.topics.load_full();
    let defaults = &broker.config.groups;
    let configs = changed_group_configs(view.group_configs(group), defaults, changes)
        .map_err(|message| (ResponseError::InvalidConfig.code(), message))?;
    if validate_only {
        return Ok(());
    }
    let command = AlterGroupConfig {
        group: group.to_string(),
        configs,
    };
    let stored = match broker.shard.coordinator.run(command).await {
        Ok(result) => result,
        Err(_) => Err(ErrorKind::NotAvailable),
    };
    stored.map_err(|e| {
        (
            error_codes::code_of(Some(e)),
            error_codes::message_of(e).to_string(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(name: &str, value: Option<&str>) -> (String, Option<String>) {
        (name.to_string(), value.map(str::to_string))
    }

    #[test]
    fn values_are_checked_against_the_brokers_bounds_and_each_other() {
        let defaults = GroupConfig::default();
        let set = changed_group_configs(&[], &defaults, &[change(SESSION_TIMEOUT, Some("50000"))]);
        assert_eq!(
            set,
            Ok(vec![(SESSION_TIMEOUT.to_string(), "50000".to_string())])
        );
        let current = set.unwrap();
        let deleted = changed_group_configs(&current, &defaults, &[change(SESSION_TIMEOUT, None)]);
        assert_eq!(deleted, Ok(vec![]));
        let legacy = vec![("group.consumer.session.timeout.ms".into(), "50000".into())];
        let renamed = changed_group_configs(&legacy, &defaults, &[]);
        assert_eq!(renamed, Ok(current));
        for refused in [
            change(SESSION_TIMEOUT, Some("1000")),
            change(SESSION_TIMEOUT, Some("fast")),
            change(HEARTBEAT_INTERVAL, Some("45000")),
            change(HEARTBEAT_INTERVAL, Some("0")),
            change("share.session.timeout.ms", Some("50000")),
            change("group.consumer.session.timeout.ms", Some("50000")),
        ] {
            let outcome = changed_group_configs(&[], &defaults, std::slice::from_ref(&refused));
            assert!(outcome.is_err(), "{refused:?} was accepted");
        }
    }
}
