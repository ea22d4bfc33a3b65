//! Dynamic broker configs: AlterConfigs and IncrementalAlterConfigs on the BROKER resource.
//! The brokers see them with the next topic catalogue.

use crate::command::{Command, Round};
use crate::entry::Entry;
use crate::state::broker_configs::{broker_config_record, CLUSTER_DEFAULT};

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
        round.append(&Entry::of(round.now_ms(), record));
        round.topics_changed();
        Ok(())
    }
}
