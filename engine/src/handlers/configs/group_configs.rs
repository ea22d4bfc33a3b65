//! The GROUP config resource (KIP-848, KIP-932, KIP-1071): a consumer-protocol group's session
//! timeout and heartbeat interval, a share group's and a streams group's settings, set per
//! group with IncrementalAlterConfigs and described with DescribeConfigs; unset, the broker's
//! `[groups]` defaults apply. Stored in the coordinator's log and published to the shards with
//! the topic catalogue.

use shoal_coordinator::commands::AlterGroupConfig;
use shoal_coordinator::{ErrorKind, TopicsView};
use shoal_protocol::config_codes::{ConfigResource, ConfigType};
use shoal_protocol::ResponseError;
use std::time::Duration;

use shoal_shards::groups::share::partition::ShareLimits;
use shoal_shards::groups::share::registry::ShareSettings;
use shoal_shards::groups::streams::registry::StreamsSettings;
use shoal_shards::groups::GroupConfig;

use crate::context::Broker;
use crate::kafka::error_codes;

pub const RESOURCE_GROUP: i8 = ConfigResource::Group as i8;
/// Kafka's GroupConfig names (the broker's defaults are `group.`-prefixed: `[groups]`).
pub const SESSION_TIMEOUT: &str = "consumer.session.timeout.ms";
pub const HEARTBEAT_INTERVAL: &str = "consumer.heartbeat.interval.ms";
pub const SHARE_SESSION_TIMEOUT: &str = "share.session.timeout.ms";
pub const SHARE_HEARTBEAT_INTERVAL: &str = "share.heartbeat.interval.ms";
pub const SHARE_LOCK_DURATION: &str = "share.record.lock.duration.ms";
pub const SHARE_DELIVERY_LIMIT: &str = "share.delivery.count.limit";
pub const SHARE_MAX_RECORD_LOCKS: &str = "share.partition.max.record.locks";
pub const SHARE_AUTO_OFFSET_RESET: &str = "share.auto.offset.reset";
pub const SHARE_ISOLATION_LEVEL: &str = "share.isolation.level";
pub const SHARE_RENEW_ACKNOWLEDGE: &str = "share.renew.acknowledge.enable";
pub const STREAMS_SESSION_TIMEOUT: &str = "streams.session.timeout.ms";
pub const STREAMS_HEARTBEAT_INTERVAL: &str = "streams.heartbeat.interval.ms";
pub const STREAMS_STANDBY_REPLICAS: &str = "streams.num.standby.replicas";
pub const DEAD_LETTER_TOPIC: &str = "errors.deadletterqueue.topic.name";
pub const DEAD_LETTER_COPY: &str = "errors.deadletterqueue.copy.record.enable";

/// One group config.
pub struct GroupConfigDef {
    pub name: &'static str,
    pub config_type: ConfigType,
    /// What it does, for `docs/configs.md`.
    pub doc: &'static str,
    /// The broker's default for it.
    pub default: fn(&GroupConfig) -> String,
    /// Its value as stored, or why it is refused.
    pub check: fn(&str) -> Result<String, String>,
}

/// The group configs Shoal honours, in the order they are described. Share groups' bounds
/// are Kafka 4.4's defaults for its `group.share.min.*`/`max.*` broker settings.
pub const GROUP_CONFIGS: &[GroupConfigDef] = &[
    GroupConfigDef {
        name: DEAD_LETTER_COPY,
        config_type: ConfigType::Boolean,
        doc: "Whether a share group's dead-letter records carry the original record's key and value, or only the headers that say where it came from and why (as Kafka 4.4, the original's headers are not copied).",
        default: |_| "false".to_string(),
        check: boolean,
    },
    GroupConfigDef {
        name: DEAD_LETTER_TOPIC,
        config_type: ConfigType::String,
        doc: "A share group's dead-letter topic (KIP-1191): records it rejects or that reach `share.delivery.count.limit` are written there before they are archived. Blank: none. It must start with `[dead_letters] topic_prefix` and have `errors.deadletterqueue.group.enable=true`.",
        default: |_| String::new(),
        check: |v| match v.trim() {
            v if v.starts_with("__") => Err("DLQ topic name must not start with '__'".to_string()),
            v => Ok(v.to_string()),
        },
    },
    GroupConfigDef {
        name: HEARTBEAT_INTERVAL,
        config_type: ConfigType::Int,
        doc: "How often the group's members heartbeat (KIP-848 groups; `[groups] consumer_heartbeat_interval_ms` by default).",
        default: |d| d.consumer_heartbeat_interval_ms.to_string(),
        check: |v| whole(v, 1, i32::MAX as i64),
    },
    GroupConfigDef {
        name: SESSION_TIMEOUT,
        config_type: ConfigType::Int,
        doc: "How long a member may go without a heartbeat before it leaves the group (`[groups] consumer_session_timeout_ms` by default).",
        default: |d| d.consumer_session_timeout_ms.to_string(),
        check: |v| whole(v, 1, i32::MAX as i64),
    },
    GroupConfigDef {
        name: SHARE_AUTO_OFFSET_RESET,
        config_type: ConfigType::String,
        doc: "Where a share group starts reading a partition it has no state for: `earliest`, `latest`, or `by_duration:` an ISO-8601 duration back from now.",
        default: |_| "latest".to_string(),
        check: |v| AutoOffsetReset::parse(v).map(|_| v.trim().to_string()),
    },
    GroupConfigDef {
        name: SHARE_DELIVERY_LIMIT,
        config_type: ConfigType::Int,
        doc: "Deliveries of a record to a share group before it is archived instead of offered again (2 to 10; `[groups] share_delivery_count_limit` by default).",
        default: |d| d.share_delivery_count_limit.to_string(),
        check: |v| whole(v, 2, 10),
    },
    GroupConfigDef {
        name: SHARE_HEARTBEAT_INTERVAL,
        config_type: ConfigType::Int,
        doc: "How often a share group's members heartbeat (5000 to 15000; `[groups] share_heartbeat_interval_ms` by default).",
        default: |d| d.share_heartbeat_interval_ms.to_string(),
        check: |v| whole(v, 5_000, 15_000),
    },
    GroupConfigDef {
        name: SHARE_ISOLATION_LEVEL,
        config_type: ConfigType::String,
        doc: "`read_committed` to deliver only committed transactional records to a share group, `read_uncommitted` (the default) for all.",
        default: |_| "read_uncommitted".to_string(),
        check: |v| match v.trim() {
            v @ ("read_committed" | "read_uncommitted") => Ok(v.to_string()),
            _ => Err("must be read_committed or read_uncommitted".to_string()),
        },
    },
    GroupConfigDef {
        name: SHARE_MAX_RECORD_LOCKS,
        config_type: ConfigType::Int,
        doc: "Records in flight per share-partition (100 to 4000; `[groups] share_partition_max_record_locks` by default).",
        default: |d| d.share_partition_max_record_locks.to_string(),
        check: |v| whole(v, 100, 4_000),
    },
    GroupConfigDef {
        name: SHARE_LOCK_DURATION,
        config_type: ConfigType::Int,
        doc: "How long a record handed to a share group's member stays with it (15000 to 60000; `[groups] share_record_lock_duration_ms` by default).",
        default: |d| d.share_record_lock_duration_ms.to_string(),
        check: |v| whole(v, 15_000, 60_000),
    },
    GroupConfigDef {
        name: SHARE_RENEW_ACKNOWLEDGE,
        config_type: ConfigType::Boolean,
        doc: "Whether a share group's members may renew the lock of a record they hold (KIP-1222's RENEW acknowledgements).",
        default: |_| "true".to_string(),
        check: boolean,
    },
    GroupConfigDef {
        name: SHARE_SESSION_TIMEOUT,
        config_type: ConfigType::Int,
        doc: "How long a share group's member may go without a heartbeat (45000 to 60000; `[groups] share_session_timeout_ms` by default).",
        default: |d| d.share_session_timeout_ms.to_string(),
        check: |v| whole(v, 45_000, 60_000),
    },
    GroupConfigDef {
        name: STREAMS_HEARTBEAT_INTERVAL,
        config_type: ConfigType::Int,
        doc: "How often a streams group's members heartbeat (`[groups] streams_heartbeat_interval_ms` by default).",
        default: |d| d.streams_heartbeat_interval_ms.to_string(),
        check: |v| whole(v, 1, i32::MAX as i64),
    },
    GroupConfigDef {
        name: STREAMS_STANDBY_REPLICAS,
        config_type: ConfigType::Int,
        doc: "Standby replicas of each task of a streams group (0 to 2, Kafka's bound; `[groups] streams_num_standby_replicas` by default).",
        default: |d| d.streams_num_standby_replicas.to_string(),
        check: |v| whole(v, 0, 2),
    },
    GroupConfigDef {
        name: STREAMS_SESSION_TIMEOUT,
        config_type: ConfigType::Int,
        doc: "How long a streams group's member may go without a heartbeat (`[groups] streams_session_timeout_ms` by default).",
        default: |d| d.streams_session_timeout_ms.to_string(),
        check: |v| whole(v, 1, i32::MAX as i64),
    },
];

/// `true` or `false`, as stored.
fn boolean(value: &str) -> Result<String, String> {
    match value.trim() {
        v @ ("true" | "false") => Ok(v.to_string()),
        _ => Err("must be true or false".to_string()),
    }
}

/// A whole number within `min..=max`, as stored.
fn whole(value: &str, min: i64, max: i64) -> Result<String, String> {
    match value.trim().parse::<i64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n.to_string()),
        _ => Err(format!("must be a whole number from {min} to {max}")),
    }
}

/// `share.auto.offset.reset`: where a share-partition new to its group starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutoOffsetReset {
    Earliest,
    Latest,
    /// The first record at or after this long before now.
    ByDuration(Duration),
}

impl AutoOffsetReset {
    pub fn parse(value: &str) -> Result<AutoOffsetReset, String> {
        match value.trim() {
            "earliest" => Ok(AutoOffsetReset::Earliest),
            "latest" => Ok(AutoOffsetReset::Latest),
            v => v
                .strip_prefix("by_duration:")
                .and_then(iso8601_duration)
                .map(AutoOffsetReset::ByDuration)
                .ok_or_else(|| {
                    "must be earliest, latest or by_duration:<ISO-8601 duration>".to_string()
                }),
        }
    }
}

/// An ISO-8601 duration as Java's `Duration.parse` reads it without a sign: `PnDTnHnMn.nS`.
fn iso8601_duration(text: &str) -> Option<Duration> {
    let rest = text.trim().strip_prefix(['P', 'p'])?;
    let (days, time) = match rest.split_once(['T', 't']) {
        Some((days, time)) => (days, Some(time)),
        None => (rest, None),
    };
    let mut seconds = 0f64;
    let mut any = false;
    if !days.is_empty() {
        let n: f64 = days.strip_suffix(['D', 'd'])?.parse().ok()?;
        seconds += n * 86_400.0;
        any = true;
    }
    if let Some(mut time) = time {
        for (unit, scale) in [('H', 3_600.0), ('M', 60.0), ('S', 1.0)] {
            let at = time.find([unit, unit.to_ascii_lowercase()]);
            if let Some(at) = at {
                let n: f64 = time[..at].parse().ok()?;
                seconds += n * scale;
                time = &time[at + 1..];
                any = true;
            }
        }
        if !time.is_empty() {
            return None;
        }
    }
    (any && seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds))
}

pub fn group_config(name: &str) -> Option<&'static GroupConfigDef> {
    GROUP_CONFIGS.iter().find(|c| c.name == name)
}

/// The broker's default for a group config (empty for a name that is not one: never asked).
fn default_of(defaults: &GroupConfig, name: &str) -> String {
    group_config(name).map_or(String::new(), |c| (c.default)(defaults))
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
        None => (default_of(defaults, name), true),
    }
}

/// A group's whole-number config as set, or by default.
fn number(configs: &[(String, String)], defaults: &GroupConfig, name: &str) -> i64 {
    stored(configs, name)
        .and_then(|v| v.parse().ok())
        .or_else(|| default_of(defaults, name).parse().ok())
        .unwrap_or_default()
}

/// The group's session timeout and heartbeat interval in ms, as set or by default.
pub fn group_timeouts(view: &TopicsView, defaults: &GroupConfig, group: &str) -> (u64, i32) {
    let configs = view.group_configs(group);
    let session = number(configs, defaults, SESSION_TIMEOUT).max(1) as u64;
    let interval = number(configs, defaults, HEARTBEAT_INTERVAL).clamp(1, i32::MAX as i64) as i32;
    (session, interval)
}

/// A streams group's settings, and its members' heartbeat interval, as its configs (or the
/// broker's defaults) give them.
pub fn streams_group_settings(
    view: &TopicsView,
    defaults: &GroupConfig,
    group: &str,
) -> (StreamsSettings, i32) {
    let configs = view.group_configs(group);
    let number = |name| number(configs, defaults, name);
    let settings = StreamsSettings {
        session_timeout_ms: number(STREAMS_SESSION_TIMEOUT).max(1) as u64,
        standby_replicas: number(STREAMS_STANDBY_REPLICAS).clamp(0, 2) as usize,
    };
    let interval = number(STREAMS_HEARTBEAT_INTERVAL).clamp(1, i32::MAX as i64) as i32;
    (settings, interval)
}

/// A share group's settings as its configs (or the broker's defaults) give them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareGroupSettings {
    pub share: ShareSettings,
    pub heartbeat_interval_ms: i32,
    pub auto_offset_reset: AutoOffsetReset,
    pub read_committed: bool,
    /// Whether RENEW acknowledgements are taken (`share.renew.acknowledge.enable`).
    pub renew_enabled: bool,
}

pub fn share_group_settings(
    view: &TopicsView,
    defaults: &GroupConfig,
    group: &str,
) -> ShareGroupSettings {
    let configs = view.group_configs(group);
    let number = |name| number(configs, defaults, name);
    let text =
        |name| stored(configs, name).map_or_else(|| default_of(defaults, name), str::to_string);
    ShareGroupSettings {
        share: ShareSettings {
            limits: ShareLimits {
                max_in_flight: number(SHARE_MAX_RECORD_LOCKS).clamp(1, u32::MAX as i64) as u32,
                delivery_limit: number(SHARE_DELIVERY_LIMIT).clamp(1, u16::MAX as i64) as u16,
                lock_duration_ms: number(SHARE_LOCK_DURATION).max(1),
                dead_letters: dead_letter_settings(view, group).is_some(),
            },
            session_timeout_ms: number(SHARE_SESSION_TIMEOUT).max(1),
        },
        heartbeat_interval_ms: number(SHARE_HEARTBEAT_INTERVAL).clamp(1, i32::MAX as i64) as i32,
        auto_offset_reset: AutoOffsetReset::parse(&text(SHARE_AUTO_OFFSET_RESET))
            .unwrap_or(AutoOffsetReset::Latest),
        read_committed: text(SHARE_ISOLATION_LEVEL) == "read_committed",
        renew_enabled: text(SHARE_RENEW_ACKNOWLEDGE) == "true",
    }
}

/// A share group's dead-letter topic and whether its records are copied there, if it has one.
pub fn dead_letter_settings(view: &TopicsView, group: &str) -> Option<(String, bool)> {
    let configs = view.group_configs(group);
    let topic = stored(configs, DEAD_LETTER_TOPIC).filter(|t| !t.is_empty())?;
    Some((
        topic.to_string(),
        stored(configs, DEAD_LETTER_COPY) == Some("true"),
    ))
}

/// The group's configs after SET (`Some`) or DELETE (`None`) of each listed one, validated:
/// each value by its own rule, the consumer session within the broker's session bounds, each
/// heartbeat interval shorter than its session.
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
        let Some(def) = group_config(name) else {
            return Err(format!("Unknown group config {name}."));
        };
        configs.retain(|(n, _)| n != name);
        if let Some(value) = value {
            let value = (def.check)(value).map_err(|why| format!("{name} {why}"))?;
            configs.push((name.clone(), value));
        }
    }
    configs.sort();
    let get = |name| number(&configs, defaults, name);
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
    if get(SHARE_HEARTBEAT_INTERVAL) >= get(SHARE_SESSION_TIMEOUT) {
        return Err(format!(
            "{SHARE_HEARTBEAT_INTERVAL} must be less than {SHARE_SESSION_TIMEOUT}"
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
        let share = [
            change(SHARE_AUTO_OFFSET_RESET, Some("by_duration:P1DT2H30M")),
            change(SHARE_LOCK_DURATION, Some("15000")),
            change(SHARE_ISOLATION_LEVEL, Some("read_committed")),
        ];
        assert!(changed_group_configs(&[], &defaults, &share).is_ok());
        let legacy = vec![("group.consumer.session.timeout.ms".into(), "50000".into())];
        let renamed = changed_group_configs(&legacy, &defaults, &[]);
        assert_eq!(renamed, Ok(current));
        for refused in [
            change(SESSION_TIMEOUT, Some("1000")),
            change(SESSION_TIMEOUT, Some("fast")),
            change(HEARTBEAT_INTERVAL, Some("45000")),
            change(HEARTBEAT_INTERVAL, Some("0")),
            change(SHARE_SESSION_TIMEOUT, Some("1000")),
            change(SHARE_LOCK_DURATION, Some("1000")),
            change(SHARE_AUTO_OFFSET_RESET, Some("soonest")),
            change(SHARE_AUTO_OFFSET_RESET, Some("by_duration:-PT1H")),
            change(SHARE_ISOLATION_LEVEL, Some("read_some")),
            change("share.unknown.setting", Some("1")),
            change("group.consumer.session.timeout.ms", Some("50000")),
        ] {
            let outcome = changed_group_configs(&[], &defaults, std::slice::from_ref(&refused));
            assert!(outcome.is_err(), "{refused:?} was accepted");
        }
    }
}

#[cfg(test)]
mod duration_tests {
    use super::*;

    #[test]
    fn iso8601_durations_read_as_java_reads_them() {
        let secs = |text| iso8601_duration(text).map(|d| d.as_secs_f64());
        assert_eq!(secs("PT1H"), Some(3_600.0));
        assert_eq!(secs("P1DT2H30M"), Some(86_400.0 + 2.0 * 3_600.0 + 1_800.0));
        assert_eq!(secs("PT0.5S"), Some(0.5));
        assert_eq!(secs("P2D"), Some(172_800.0));
        for refused in ["", "P", "PT", "1H", "PT1X", "PT-1H", "P1H", "PT1H2"] {
            assert_eq!(secs(refused), None, "{refused}");
        }
    }
}
