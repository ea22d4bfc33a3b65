//! Dynamic broker configs: AlterConfigs and IncrementalAlterConfigs on the BROKER resource.
//! The brokers see them with the next topic catalogue.

use crate::broker_configs::{broker_config_record, CLUSTER_DEFAULT};
use crate::command::{Command, Round};
use crate::entry::Entry;

/// One broker's (or, with `broker` None, the cluster default's) configs, whole, as the engine
/// validated them; written only if what is stored is still `expected` (what the engine
/// changed), so two brokers altering at once cannot lose one's change.
#[derive(Debug, Clone)]
pub struct AlterBrokerConfig {
    pub broker: Option<i32>,
    pub expected: Vec<(String, String)>,
    pub configs: Vec<(String, String)>,
}

impl Command for AlterBrokerConfig {
    /// On a conflict, what is stored now, to change again.
    type Reply = Result<(), Vec<(String, String)>>;
    const WRITE: bool = true;

    fn run(self, round: &mut Round<'_>) -> Self::Reply {
        let broker = self.broker.unwrap_or(CLUSTER_DEFAULT);
        let stored = round.state().broker_configs(broker);
        if stored != self.expected {
            return Err(stored);
        }
        let record = broker_config_record(broker, &self.configs);
        // Applied, a cluster-wide default holds for every topic that does not set the config
        // itself (the state resolves their configs again).
        round.append(&Entry::of(round.now_ms(), record));
        round.topics_changed();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use uuid::Uuid;

    use super::*;
    use crate::commands::{AlterTopicConfig, CreateTopic};
    use crate::frames::scan_frames;
    use crate::records::TopicConfig;
    use crate::state::{emit, CoordinatorState};
    use crate::topic_configs::TopicOverrides;
    use crate::{Command, CoordinatorMetrics};

    /// Runs `command` on `state`, its entries also framed into `log`.
    fn run<C: Command>(state: &mut CoordinatorState, log: &mut Vec<u8>, command: C) -> C::Reply {
        let metrics = CoordinatorMetrics::default();
        command.run(&mut Round::new(state, log, 1, &metrics))
    }

    fn own(configs: &[(&str, &str)]) -> TopicOverrides {
        let own = configs.iter().map(|(n, v)| (n.to_string(), v.to_string()));
        own.collect()
    }

    fn defaults(configs: &[(&str, &str)]) -> AlterBrokerConfig {
        AlterBrokerConfig {
            broker: None,
            expected: Vec::new(),
            configs: configs
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
        }
    }

    fn config(state: &CoordinatorState, topic: &str) -> TopicConfig {
        state.topic_config(topic).unwrap()
    }

    #[test]
    fn a_cluster_wide_default_holds_for_each_topic_that_does_not_set_the_config_itself() {
        let (mut state, mut log) = (CoordinatorState::default(), Vec::new());
        let create = |name: &str, overrides| CreateTopic {
            name: name.into(),
            partitions: 1,
            overrides,
        };
        let short = own(&[("retention.ms", "1000")]);
        run(&mut state, &mut log, create("own", short)).unwrap();
        run(&mut state, &mut log, create("plain", own(&[]))).unwrap();
        // Written by an older Shoal: no list of its own configs; it sets what is not Kafka's.
        let small = TopicConfig {
            max_message_bytes: 100,
            ..TopicConfig::default()
        };
        let id = Uuid::from_u128(7);
        let mut old = emit::partitions_created(id, "old", 0, 1);
        old.extend(emit::older::whole_topic_config(id, &small));
        let old = Entry::new(1, old);
        crate::frames::encode_frame(&old, &mut log);
        state.apply(&old);
        let own_of_old = &state.topic_meta("old").unwrap().overrides;
        assert_eq!(
            own_of_old.get("max.message.bytes").map(String::as_str),
            Some("100")
        );
        assert_eq!(own_of_old.len(), 1);
        let image = state.encode_snapshot();
        assert_eq!(CoordinatorState::decode_snapshot(&image).unwrap(), state);

        let set = [("log.retention.ms", "5000"), ("message.max.bytes", "2000")];
        run(&mut state, &mut log, defaults(&set)).unwrap();
        let (own_topic, plain, old) = (
            config(&state, "own"),
            config(&state, "plain"),
            config(&state, "old"),
        );
        assert_eq!(
            (own_topic.retention_ms, own_topic.max_message_bytes),
            (1_000, 2_000)
        );
        assert_eq!(
            (plain.retention_ms, plain.max_message_bytes),
            (5_000, 2_000)
        );
        assert_eq!((old.retention_ms, old.max_message_bytes), (5_000, 100));
        // A topic created now starts from them too; one that sets a config keeps it.
        let created = run(&mut state, &mut log, create("later", own(&[]))).unwrap();
        assert_eq!(created.config.retention_ms, 5_000);
        assert!(created.overrides.is_empty());
        let alter = AlterTopicConfig {
            name: "plain".into(),
            overrides: own(&[("max.message.bytes", "300")]),
        };
        run(&mut state, &mut log, alter).unwrap();
        let plain = config(&state, "plain");
        assert_eq!((plain.retention_ms, plain.max_message_bytes), (5_000, 300));

        // The log replays to the same state, and so does a snapshot of it.
        let mut replayed = CoordinatorState::default();
        let scan = scan_frames(&log);
        assert!(scan.damage.is_none());
        for entry in &scan.entries {
            replayed.apply(entry);
        }
        assert_eq!(replayed, state);
        let image = state.encode_snapshot();
        assert_eq!(CoordinatorState::decode_snapshot(&image).unwrap(), state);

        // Unset, the defaults are Kafka's again, for every topic that does not set them.
        let stored = state.broker_configs(CLUSTER_DEFAULT);
        let unset = AlterBrokerConfig {
            expected: stored,
            ..defaults(&[])
        };
        run(&mut state, &mut log, unset).unwrap();
        let kafka = TopicConfig::default();
        assert_eq!(config(&state, "plain").retention_ms, kafka.retention_ms);
        assert_eq!(config(&state, "plain").max_message_bytes, 300);
        assert_eq!(config(&state, "old").max_message_bytes, 100);
        assert_eq!(
            config(&state, "own").max_message_bytes,
            kafka.max_message_bytes
        );
        assert_eq!(config(&state, "own").retention_ms, 1_000);
    }

    #[test]
    fn a_value_the_topic_config_refuses_leaves_kafkas_default_in_effect() {
        let (mut state, mut log) = (CoordinatorState::default(), Vec::new());
        let create = CreateTopic {
            name: "t".into(),
            partitions: 1,
            overrides: TopicOverrides::new(),
        };
        run(&mut state, &mut log, create).unwrap();
        run(
            &mut state,
            &mut log,
            defaults(&[("log.retention.ms", "soon")]),
        )
        .unwrap();
        assert_eq!(config(&state, "t"), TopicConfig::default());
    }
}
