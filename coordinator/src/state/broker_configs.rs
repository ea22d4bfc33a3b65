//! The coordinator's dynamic broker configs: looked up and applied from the log.

use shoal_protocol::records::ShoalBrokerConfigRecord;

use super::CoordinatorState;
use crate::broker_configs::CLUSTER_DEFAULT;
use crate::topic_configs::resolve;

impl CoordinatorState {
    /// The configs stored for a broker id (or `CLUSTER_DEFAULT`).
    pub(crate) fn broker_configs(&self, broker: i32) -> Vec<(String, String)> {
        self.broker_configs
            .get(&broker)
            .cloned()
            .unwrap_or_default()
    }

    pub(crate) fn apply_broker_config(&mut self, record: &ShoalBrokerConfigRecord) {
        let configs: Vec<(String, String)> = record
            .configs
            .iter()
            .map(|c| (c.name.clone(), c.value.clone()))
            .collect();
        match configs.is_empty() {
            true => self.broker_configs.remove(&record.broker_id),
            false => self.broker_configs.insert(record.broker_id, configs),
        };
        if record.broker_id == CLUSTER_DEFAULT {
            self.topics_follow_defaults();
        }
    }

    /// After the cluster-wide defaults changed: every topic's config in effect, resolved
    /// again from its own configs.
    fn topics_follow_defaults(&mut self) {
        let defaults = self.broker_configs(CLUSTER_DEFAULT);
        for topic in self.topics.values_mut() {
            topic.config = resolve(&topic.overrides, &defaults);
        }
    }
}
