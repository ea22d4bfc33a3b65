//! `docs/configs.md`: every config Shoal honours, written from the tables DescribeConfigs,
//! AlterConfigs and IncrementalAlterConfigs use (a test keeps the file equal to what this
//! writes: `SHOAL_WRITE_CONFIGS_DOC=1 cargo test -p shoal configs_doc`).

use shoal_coordinator::TopicConfig;
use shoal_shards::groups::GroupConfig;

use super::group_configs::GROUP_CONFIGS;
use super::static_broker_configs::STATIC_BROKER_CONFIGS;
use crate::config::BrokerConfig;
use crate::dynamic_configs::{DYNAMIC_CONFIGS, WITHOUT_EFFECT};
use shoal_coordinator::topic_configs::{IGNORED_TOPIC_CONFIGS, TOPIC_CONFIGS};

pub fn markdown() -> String {
    let file = BrokerConfig::default();
    let mut out = String::from(
        "# Configs\n\n\
         Every config Shoal honours, by Kafka's name and with Kafka's type, as DescribeConfigs\n\
         reports them; written from the tables the broker answers with\n\
         (`coordinator/src/topic_configs.rs`, `engine/src/handlers/configs/` and\n\
         `engine/src/dynamic_configs/catalogue.rs`;\n\
         `SHOAL_WRITE_CONFIGS_DOC=1 cargo test -p shoal configs_doc` rewrites this file, and the\n\
         test fails while it differs). Defaults are those of a broker without a config file.\n\n\
         ## Topic configs\n\n\
         Set at CreateTopics or with AlterConfigs / IncrementalAlterConfigs (`shoal topic alter`,\n\
         `kafka-configs --entity-type topics`). A topic that does not set one follows its\n\
         cluster-wide default, the broker config in the second column, which changes at run time\n\
         on the cluster default resource (`kafka-configs --entity-type brokers --entity-default\n\
         --alter --add-config log.retention.ms=...`) and then holds for every such topic at once;\n\
         a broker's own resource refuses them, since every broker serves every partition.\n\n\
         | config | cluster-wide default | type | Kafka's default | meaning |\n\
         |---|---|---|---|---|\n",
    );
    let defaults = TopicConfig::default();
    for c in TOPIC_CONFIGS {
        let value = c.value_in(&defaults);
        let name = match c.broker_default {
            Some(broker_default) => format!("{}` | `{broker_default}", c.name),
            // Rendered as `name` | `(none)`: no broker config is its default.
            None => format!("{}` | `(none)", c.name),
        };
        row(&mut out, &name, c.config_type.name(), &value, c.doc);
    }
    out.push_str(&format!(
        "\nKafka's topic configs that mean nothing for a diskless topic are accepted and ignored \
         (not described): {}.\n",
        names(IGNORED_TOPIC_CONFIGS)
    ));
    out.push_str(
        "\n## Broker configs that change at run time\n\n\
         Set per broker (resource name: its node id) or as the cluster default (name \"\") with\n\
         AlterConfigs / IncrementalAlterConfigs (`kafka-configs --entity-type brokers`); a\n\
         broker's own value wins over the cluster default, which wins over the config file.\n\n\
         | config | type | config file's default | meaning |\n|---|---|---|---|\n",
    );
    for c in DYNAMIC_CONFIGS {
        let value = (c.file_value)(&file);
        row(&mut out, c.name, c.config_type.name(), &value, c.doc);
    }
    out.push_str(&format!(
        "\nKafka's dynamic broker configs with no effect here are stored and described when set, \
         so Kafka's tools work: {}.\n",
        names(WITHOUT_EFFECT)
    ));
    out.push_str(
        "\n## Broker configs from the config file\n\n\
         Described read-only (`shoal.example.toml` names the file's keys); changing one takes a\n\
         restart.\n\n\
         | config | type | default | meaning |\n|---|---|---|---|\n",
    );
    for c in STATIC_BROKER_CONFIGS {
        let value = (c.value)(&file);
        row(&mut out, c.name, c.config_type.name(), &value, c.doc);
    }
    out.push_str(
        "\n## Group configs\n\n\
         Per consumer group (KIP-848), with IncrementalAlterConfigs (`kafka-configs\n\
         --entity-type groups`).\n\n\
         | config | type | default | meaning |\n|---|---|---|---|\n",
    );
    let groups = GroupConfig::default();
    for c in GROUP_CONFIGS {
        let value = (c.default)(&groups).to_string();
        row(&mut out, c.name, c.config_type.name(), &value, c.doc);
    }
    out
}

fn row(out: &mut String, name: &str, kind: &str, value: &str, doc: &str) {
    let value = match value {
        "" => "(none)".to_string(),
        v => format!("`{v}`"),
    };
    out.push_str(&format!("| `{name}` | {kind} | {value} | {doc} |\n"));
}

fn names(list: &[&str]) -> String {
    list.iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    #[test]
    fn configs_doc_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/configs.md");
        let written = super::markdown();
        if std::env::var_os("SHOAL_WRITE_CONFIGS_DOC").is_some() {
            std::fs::write(&path, &written).unwrap();
        }
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            current == written,
            "docs/configs.md differs from the config tables: SHOAL_WRITE_CONFIGS_DOC=1 cargo test \
             -p shoal configs_doc"
        );
    }
}
