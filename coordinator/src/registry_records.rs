//! The schema registry's records as the log holds them: their setting codes and the checks
//! an entry's registry records pass before they are applied (the registry's state, which
//! applies them, is `state/schema_registry.rs`).

use shoal_protocol::records::AnyRecord;
use shoal_registry::{CompatibilityLevel, Mode, SchemaType};

/// The setting codes of `ShoalRegistrySettingRecord`.
pub const SETTING_COMPATIBILITY: i8 = 1;
pub const SETTING_MODE: i8 = 2;

/// Why a registry record cannot be applied, if it cannot.
pub(crate) fn check_registry_record(record: &AnyRecord) -> Result<(), String> {
    match record {
        AnyRecord::ShoalRegistrySchemaRecord(r) => {
            if r.id < 1 {
                return Err(format!("registry schema id {}", r.id));
            }
            SchemaType::parse(Some(&r.schema_type))
                .map(|_| ())
                .map_err(|_| format!("schema type {}", r.schema_type))
        }
        AnyRecord::ShoalRegistryVersionRecord(r) if r.version < 1 || r.id < 1 => {
            Err(format!("registry version {} of schema {}", r.version, r.id))
        }
        AnyRecord::ShoalRegistrySettingRecord(r) => match (r.setting, r.value.as_deref()) {
            (_, None) if matches!(r.setting, SETTING_COMPATIBILITY | SETTING_MODE) => Ok(()),
            (SETTING_COMPATIBILITY, Some(level)) => CompatibilityLevel::parse(level)
                .map(|_| ())
                .map_err(|_| format!("compatibility level {level}")),
            (SETTING_MODE, Some(mode)) => Mode::parse(mode)
                .map(|_| ())
                .map_err(|_| format!("mode {mode}")),
            (code, _) => Err(format!("registry setting code {code}")),
        },
        _ => Ok(()),
    }
}
