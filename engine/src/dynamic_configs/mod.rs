//! Dynamic broker configs (Kafka's BROKER config resource): the settings an operator may
//! change while the broker runs, per broker or as the cluster default, stored in the
//! coordinator's records and put into effect without a restart.

pub mod catalogue;
pub mod live;

pub use catalogue::{check_value, dynamic_config, DynamicConfig, DYNAMIC_CONFIGS, WITHOUT_EFFECT};
pub use live::LiveConfigs;
