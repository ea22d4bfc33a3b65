//! A reference from one schema to another registered one: the name the referring schema uses
//! for it (an Avro full name, a Protobuf import path, a JSON Schema `$ref` URL) and the
//! subject and version it was registered under.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SchemaReference {
    pub name: String,
    pub subject: String,
    pub version: i32,
}
