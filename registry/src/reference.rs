//! A reference from one schema to another registered one: the name the referring schema uses
//! for it (an Avro full name, a Protobuf import path, a JSON Schema `$ref` URL) and the
//! subject and version it was registered under.

use serde::{Deserialize, Serialize};

/// How deep references may nest, and how many schemas one schema may refer to in all, unless
/// `[schema_registry]` says otherwise.
pub const REFERENCE_DEPTH_MAX_DEFAULT: usize = 16;
pub const REFERENCES_MAX_DEFAULT: usize = 256;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SchemaReference {
    pub name: String,
    pub subject: String,
    pub version: i32,
}

/// A referenced schema as parsing needs it: the name the reference gives it and its stored
/// text.
#[derive(Debug, Clone, Copy)]
pub struct Referenced<'a> {
    pub name: &'a str,
    pub text: &'a str,
}
