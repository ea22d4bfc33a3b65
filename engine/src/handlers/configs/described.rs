//! One config as DescribeConfigs answers it, whatever its resource: value, source, type and
//! (when asked) the synonyms it was chosen from.

use kafka_protocol::protocol::StrBytes;
use shoal_protocol::config_codes::{ConfigSource, ConfigType};
use shoal_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsSynonym,
};

/// One config: its value and source are the first of `found` (in precedence order), each
/// level set under the config's own name.
pub fn described(
    name: &str,
    found: &[(ConfigSource, String)],
    read_only: bool,
    config_type: ConfigType,
    synonyms: bool,
) -> DescribeConfigsResourceResult {
    let found: Vec<(ConfigSource, &str, String)> = found
        .iter()
        .map(|(source, value)| (*source, name, value.clone()))
        .collect();
    described_synonyms(name, &found, read_only, config_type, synonyms)
}

/// The same where levels name it differently (a topic config's cluster-wide default is the
/// broker config `log.retention.ms` for `retention.ms`): (source, name there, value).
pub fn described_synonyms(
    name: &str,
    found: &[(ConfigSource, &str, String)],
    read_only: bool,
    config_type: ConfigType,
    synonyms: bool,
) -> DescribeConfigsResourceResult {
    let (source, value) = found
        .first()
        .map(|(source, _, value)| (*source, value.clone()))
        .unwrap_or((ConfigSource::Default, String::new()));
    let synonyms = match synonyms {
        true => found
            .iter()
            .map(|(source, synonym, value)| {
                DescribeConfigsSynonym::default()
                    .with_name(StrBytes::from_string(synonym.to_string()))
                    .with_value(Some(StrBytes::from_string(value.clone())))
                    .with_source(*source as i8)
            })
            .collect(),
        false => Vec::new(),
    };
    DescribeConfigsResourceResult::default()
        .with_name(StrBytes::from_string(name.to_string()))
        .with_value(Some(StrBytes::from_string(value)))
        .with_read_only(read_only)
        .with_config_source(source as i8)
        .with_config_type(config_type as i8)
        .with_synonyms(synonyms)
}
