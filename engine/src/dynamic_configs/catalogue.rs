//! Which broker configs may change while the broker runs, how their values are checked, and
//! what the config file says of each. Kafka's names where Kafka has the setting; Shoal's own
//! are its config file's keys in Kafka's dotted spelling.

use shoal_coordinator::topic_configs::topic_default;
use shoal_protocol::config_codes::ConfigType;

use crate::config::{BrokerConfig, BUFFER_MAX_BYTES_LIMIT};

/// The TLS listeners' PEM files (`[ssl]` certificate_file, key_file, truststore_file): a new
/// path, or the same one again, re-reads them (Kafka re-reads its keystore likewise).
pub const SSL_CERTIFICATE: &str = "ssl.certificate.location";
pub const SSL_KEY: &str = "ssl.key.location";
pub const SSL_TRUSTSTORE: &str = "ssl.truststore.location";
pub const SSL_FILES: [&str; 3] = [SSL_CERTIFICATE, SSL_KEY, SSL_TRUSTSTORE];

/// What putting a dynamic config into effect changes (`live` handles each, exhaustively, so
/// no config can be read back by a misspelt name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    FetchMaxBytes,
    FetchMaxWaitMs,
    LogLevel,
    RequestMemoryBytes,
    MaxConnections,
    MaxConnectionsPerIp,
    /// One of the TLS listeners' PEM files: they are re-read together.
    TlsFile,
    BufferMaxBytes,
    CommitIntervalMs,
}

/// A broker config an operator may set per broker or as the cluster default.
pub struct DynamicConfig {
    pub name: &'static str,
    pub config_type: ConfigType,
    /// What it does, for `docs/configs.md`.
    pub doc: &'static str,
    pub effect: Effect,
    /// Why a value cannot be taken, given the rest of the config file.
    pub check: fn(&BrokerConfig, &str) -> Result<(), String>,
    /// The value the config file gives (or its default).
    pub file_value: fn(&BrokerConfig) -> String,
}

pub const DYNAMIC_CONFIGS: &[DynamicConfig] = &[
    DynamicConfig {
        name: "fetch.max.bytes",
        config_type: ConfigType::Int,
        doc: "The most bytes one Fetch answer carries, whatever the client asks (`[fetch] max_bytes`).",
        effect: Effect::FetchMaxBytes,
        check: |_, v| integer(v, 1024, i32::MAX as u64),
        file_value: |c| c.fetch.max_bytes.to_string(),
    },
    DynamicConfig {
        name: "fetch.max.wait.ms",
        config_type: ConfigType::Long,
        doc: "The longest a Fetch waits for data, whatever the client asks (`[fetch] max_wait_ms`).",
        effect: Effect::FetchMaxWaitMs,
        check: |_, v| integer(v, 0, 3_600_000),
        file_value: |c| c.fetch.max_wait_ms.to_string(),
    },
    DynamicConfig {
        name: "log.level",
        config_type: ConfigType::String,
        doc: "The log filter (`[log] level`), e.g. info or shoal=debug.",
        effect: Effect::LogLevel,
        check: |_, v| crate::log_filter::check(v),
        file_value: |_| crate::log_filter::at_start(),
    },
    DynamicConfig {
        name: "max.in.flight.request.bytes",
        config_type: ConfigType::Long,
        doc: "Each shard's memory budget for requests and their answers (`max_in_flight_request_bytes`).",
        effect: Effect::RequestMemoryBytes,
        check: |_, v| integer(v, 1 << 20, 1 << 40),
        file_value: |c| c.max_in_flight_request_bytes.to_string(),
    },
    DynamicConfig {
        name: "max.connections",
        config_type: ConfigType::Int,
        doc: "The most client connections the broker keeps; more are closed at once.",
        effect: Effect::MaxConnections,
        check: |_, v| integer(v, 1, i32::MAX as u64),
        file_value: |c| c.max_connections.to_string(),
    },
    DynamicConfig {
        name: "max.connections.per.ip",
        config_type: ConfigType::Int,
        doc: "The most client connections from one address; more are closed at once.",
        effect: Effect::MaxConnectionsPerIp,
        check: |_, v| integer(v, 1, i32::MAX as u64),
        file_value: |c| c.max_connections_per_ip.to_string(),
    },
    DynamicConfig {
        name: SSL_CERTIFICATE,
        config_type: ConfigType::String,
        doc: "The TLS listeners' certificate chain, PEM (`[ssl] certificate_file`); set again to re-read it.",
        effect: Effect::TlsFile,
        check: |_, v| file_path(v),
        file_value: |c| path_value(&c.ssl.certificate_file),
    },
    DynamicConfig {
        name: SSL_KEY,
        config_type: ConfigType::String,
        doc: "The TLS listeners' private key, PEM (`[ssl] key_file`).",
        effect: Effect::TlsFile,
        check: |_, v| file_path(v),
        file_value: |c| path_value(&c.ssl.key_file),
    },
    DynamicConfig {
        name: SSL_TRUSTSTORE,
        config_type: ConfigType::String,
        doc: "The CAs trusted for client certificates, PEM (`[ssl] truststore_file`).",
        effect: Effect::TlsFile,
        check: |_, v| file_path(v),
        file_value: |c| path_value(&c.ssl.truststore_file),
    },
    DynamicConfig {
        name: "produce.buffer.max.bytes",
        config_type: ConfigType::Int,
        doc: "The size at which a shard's open WAL buffer is uploaded (`[produce] buffer_max_bytes`).",
        effect: Effect::BufferMaxBytes,
        check: |c, v| {
            let most = c
                .produce
                .max_inflated_batch_bytes
                .min(BUFFER_MAX_BYTES_LIMIT);
            integer(v, 1, most as u64)
        },
        file_value: |c| c.produce.buffer_max_bytes.to_string(),
    },
    DynamicConfig {
        name: "produce.commit.interval.ms",
        config_type: ConfigType::Long,
        doc: "The longest a produced batch waits in the open WAL buffer before upload (`[produce] commit_interval_ms`).",
        effect: Effect::CommitIntervalMs,
        check: |_, v| integer(v, 0, 60_000),
        file_value: |c| c.produce.commit_interval_ms.to_string(),
    },
];

/// Kafka's dynamic broker configs that mean nothing here (no Kerberos, no background thread
/// pool): taken and kept so Kafka's tools and tests work, and described when set.
pub const WITHOUT_EFFECT: &[&str] = &[
    "background.threads",
    "sasl.kerberos.kinit.cmd",
    "sasl.kerberos.min.time.before.relogin",
    "sasl.kerberos.principal.to.local.rules",
    "sasl.kerberos.service.name",
    "sasl.kerberos.ticket.renew.jitter",
    "sasl.kerberos.ticket.renew.window.factor",
];

pub fn dynamic_config(name: &str) -> Option<&'static DynamicConfig> {
    DYNAMIC_CONFIGS.iter().find(|c| c.name == name)
}

/// Whether a value for `name` may be stored, and if not, why.
pub fn check_value(file: &BrokerConfig, name: &str, value: &str) -> Result<(), String> {
    match (dynamic_config(name), topic_default(name)) {
        (Some(config), _) => (config.check)(file, value),
        (None, Some(topic_config)) => topic_config
            .check(value)
            .map_err(|e| format!("{name}: {e}")),
        (None, None) if WITHOUT_EFFECT.contains(&name) => Ok(()),
        (None, None) => Err(format!("Unknown broker config name: {name}")),
    }
}

fn path_value(path: &Option<std::path::PathBuf>) -> String {
    path.as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default()
}

/// A file's path (whether it loads is checked where it is used).
fn file_path(value: &str) -> Result<(), String> {
    match value.trim() {
        "" => Err("a file's path cannot be empty".to_string()),
        v if v.len() > 4096 => Err("a file's path is at most 4096 bytes".to_string()),
        _ => Ok(()),
    }
}

/// A whole number in `least..=most`.
fn integer(value: &str, least: u64, most: u64) -> Result<(), String> {
    match value.trim().parse::<u64>() {
        Ok(n) if (least..=most).contains(&n) => Ok(()),
        _ => Err(format!(
            "'{value}' is not a whole number from {least} to {most}"
        )),
    }
}

/// The value a config takes: the broker's own dynamic value, else the cluster default's,
/// else the config file's. Dynamic values were checked when stored (and a broker whose file
/// has since changed sees a value out of range as unset).
pub fn effective<'a>(
    file: &BrokerConfig,
    config: &DynamicConfig,
    own: &'a [(String, String)],
    default: &'a [(String, String)],
) -> String {
    [own, default]
        .into_iter()
        .filter_map(|set| set.iter().find(|(n, _)| n == config.name))
        .map(|(_, v)| v)
        .find(|v| (config.check)(file, v).is_ok())
        .cloned()
        .unwrap_or_else(|| (config.file_value)(file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_effect_but_the_tls_files_belongs_to_one_config() {
        // `live` sets both connection limits together and each setting once from the table.
        for config in DYNAMIC_CONFIGS
            .iter()
            .filter(|c| c.effect != Effect::TlsFile)
        {
            let same = DYNAMIC_CONFIGS.iter().filter(|c| c.effect == config.effect);
            assert_eq!(same.count(), 1, "{}", config.name);
        }
        let tls = DYNAMIC_CONFIGS
            .iter()
            .filter(|c| c.effect == Effect::TlsFile);
        assert_eq!(tls.map(|c| c.name).collect::<Vec<_>>(), SSL_FILES);
    }

    #[test]
    fn values_are_checked_against_each_configs_range() {
        let file = BrokerConfig::default();
        assert!(check_value(&file, "max.connections", "5").is_ok());
        assert!(check_value(&file, "max.connections", "0").is_err());
        assert!(check_value(&file, "max.connections", "five").is_err());
        assert!(check_value(&file, "produce.buffer.max.bytes", "1048576").is_ok());
        assert!(check_value(&file, "produce.buffer.max.bytes", "1099511627776").is_err());
        assert!(check_value(&file, "sasl.kerberos.min.time.before.relogin", "58000").is_ok());
        assert!(check_value(&file, "log.level", "debug,shoal=info").is_ok());
        assert!(check_value(&file, "no.such.config", "1").is_err());
    }

    #[test]
    fn a_brokers_own_value_comes_before_the_default_and_the_file() {
        let file = BrokerConfig::default();
        let config = dynamic_config("max.connections").unwrap();
        let set = |v: &str| vec![("max.connections".to_string(), v.to_string())];
        assert_eq!(effective(&file, config, &[], &[]), "10000");
        assert_eq!(effective(&file, config, &[], &set("7")), "7");
        assert_eq!(effective(&file, config, &set("3"), &set("7")), "3");
        assert_eq!(effective(&file, config, &set("0"), &set("7")), "7");
    }
}
