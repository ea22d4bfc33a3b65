//! The schema registry's pure parts: the formats (parsing, the stored canonical text),
//! compatibility rules, levels and modes, and the errors with Confluent's codes. No I/O: the
//! broker serves the REST API (`registry-server/`) and the coordinator keeps the
//! registry's state in its log.

pub mod avro;
pub mod canonical;
pub mod compatibility;
pub mod compatibility_level;
pub mod decode;
pub mod error;
pub mod json_schema;
pub mod mode;
pub mod parsed;
pub mod protobuf;
pub mod record_name;
pub mod reference;
pub mod schema_type;
pub mod subject;
pub mod version;
pub mod wire;

pub use compatibility::{Earlier, Problem};
pub use compatibility_level::CompatibilityLevel;
pub use decode::Decoder;
pub use error::RegistryError;
pub use mode::Mode;
pub use parsed::ParsedSchema;
pub use record_name::record_name;
pub use reference::{Referenced, SchemaReference};
pub use schema_type::SchemaType;
pub use subject::check_subject;
pub use version::VersionSelector;
