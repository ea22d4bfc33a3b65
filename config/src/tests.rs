use super::*;

#[test]
fn the_example_config_parses_and_validates() {
    let text = include_str!("../../shoal.example.toml");
    let config: BrokerConfig = toml::from_str(text).unwrap();
    config.validate().unwrap();
    assert_eq!(config.produce.commit_interval_ms, 5);
}

/// Every key of the example file is a setting with its default value, and every setting is
/// in the example: the file documents the defaults, key for key.
#[test]
fn the_example_config_is_the_defaults_key_for_key() {
    let example: toml::Table = toml::from_str(include_str!("../../shoal.example.toml")).unwrap();
    let defaults = toml::Table::try_from(BrokerConfig::default()).unwrap();
    let keys = |table: &toml::Table| -> Vec<String> {
        let mut keys = Vec::new();
        for (key, value) in table {
            match value {
                toml::Value::Table(inner) if !inner.is_empty() => {
                    keys.extend(inner.keys().map(|k| format!("{key}.{k}")))
                }
                _ => keys.push(key.clone()),
            }
        }
        keys
    };
    assert_eq!(keys(&example), keys(&defaults), "the same keys");
    assert_eq!(example, defaults, "the same values");
}

#[test]
fn unknown_keys_and_bad_values_are_refused() {
    assert!(toml::from_str::<BrokerConfig>("listne = \"x\"").is_err());
    let config: BrokerConfig = toml::from_str("default_partitions = 0").unwrap();
    assert!(config.validate().is_err());
}

#[test]
fn a_cluster_needs_the_coordinator_in_postgres_and_a_heartbeat_within_its_lease() {
    let parse = |text: &str| toml::from_str::<BrokerConfig>(text).unwrap().validate();
    let e = parse("[cluster]\nenabled = true\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("postgres"), "{e}");
    let postgres = "[coordinator]\nkind = \"postgres\"\nurl = \"postgres://u@h/db\"\n";
    let e = parse(&format!(
        "{postgres}[cluster]\nenabled = true\nlease_ms = 1000\nheartbeat_ms = 1000\n"
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("heartbeat_ms"), "{e}");
}

#[test]
fn the_postgres_pool_size_is_bounded_by_the_rounds_a_log_may_have_in_flight() {
    let with_pool = |size: usize| {
        let text = format!(
            "[coordinator]\nkind = \"postgres\"\nurl = \"postgres://u@h/db\"\n\
             pool_size = {size}\n"
        );
        toml::from_str::<BrokerConfig>(&text)
            .unwrap()
            .coordinator
            .database()
    };
    assert_eq!(with_pool(4).unwrap().unwrap().pool_size, 4);
    for refused in [0, 17] {
        let e = with_pool(refused).unwrap_err().to_string();
        assert!(e.contains("pool_size"), "{e}");
    }
}
