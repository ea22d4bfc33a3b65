//! Kafka's config wire codes, typed: what a config resource is, a config's type and where its
//! value came from (DescribeConfigs, AlterConfigs, IncrementalAlterConfigs). One declaration
//! each, so a handler cannot send a type or source Kafka does not define.

/// ConfigResource.Type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i8)]
pub enum ConfigResource {
    Topic = 2,
    Broker = 4,
    BrokerLogger = 8,
    ClientMetrics = 16,
    Group = 32,
}

/// ConfigEntry.ConfigType (DescribeConfigs v3+).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i8)]
pub enum ConfigType {
    Boolean = 1,
    String = 2,
    Int = 3,
    Short = 4,
    Long = 5,
    Double = 6,
    List = 7,
    Class = 8,
    Password = 9,
}

impl ConfigType {
    /// Kafka's name for it (`ConfigDef.Type`).
    pub const fn name(self) -> &'static str {
        match self {
            ConfigType::Boolean => "BOOLEAN",
            ConfigType::String => "STRING",
            ConfigType::Int => "INT",
            ConfigType::Short => "SHORT",
            ConfigType::Long => "LONG",
            ConfigType::Double => "DOUBLE",
            ConfigType::List => "LIST",
            ConfigType::Class => "CLASS",
            ConfigType::Password => "PASSWORD",
        }
    }
}

/// ConfigEntry.ConfigSource: where the value in effect was set, in Kafka's precedence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i8)]
pub enum ConfigSource {
    DynamicTopic = 1,
    DynamicBroker = 2,
    DynamicDefaultBroker = 3,
    StaticBroker = 4,
    Default = 5,
    DynamicGroup = 8,
}

/// IncrementalAlterConfigs' operation on one config (AlterableConfig.ConfigOperation).
pub mod config_operation {
    pub const SET: i8 = 0;
    pub const DELETE: i8 = 1;
    pub const APPEND: i8 = 2;
    pub const SUBTRACT: i8 = 3;
}
