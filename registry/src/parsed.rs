//! A schema parsed in its format, whatever the format: what registration checks a new schema
//! is, and what compatibility compares.

use crate::compatibility::Problem;
use crate::reference::Referenced;
use crate::{avro, canonical, protobuf, RegistryError, SchemaType};

#[derive(Debug, Clone)]
pub enum ParsedSchema {
    Avro(apache_avro::Schema),
    /// A JSON Schema, kept as its JSON.
    Json(serde_json::Value),
    /// A compiled `.proto` file (its imports in its pool).
    Protobuf(prost_reflect::FileDescriptor),
}

impl ParsedSchema {
    /// `text` in `schema_type`, able to use the schemas `references` name.
    pub fn parse(
        schema_type: SchemaType,
        text: &str,
        references: &[Referenced<'_>],
    ) -> Result<ParsedSchema, RegistryError> {
        match schema_type {
            SchemaType::Avro => {
                let texts: Vec<&str> = references.iter().map(|r| r.text).collect();
                avro::parse(text, &texts).map(ParsedSchema::Avro)
            }
            SchemaType::Json => {
                let value: serde_json::Value = serde_json::from_str(text)
                    .map_err(|e| RegistryError::InvalidSchema(format!("{text}, details: {e}")))?;
                if !(value.is_object() || value.is_boolean()) {
                    return Err(RegistryError::InvalidSchema(format!(
                        "{text}, details: a JSON Schema is an object or a boolean"
                    )));
                }
                Ok(ParsedSchema::Json(value))
            }
            SchemaType::Protobuf => protobuf::parse(text, references).map(ParsedSchema::Protobuf),
        }
    }

    /// The text a schema is stored, compared and answered in (see `canonical`).
    pub fn canonical_text(schema_type: SchemaType, text: &str) -> Result<String, RegistryError> {
        match schema_type {
            SchemaType::Avro | SchemaType::Json => canonical::compact_json(text),
            SchemaType::Protobuf => protobuf::canonical_text(text),
        }
    }

    pub fn schema_type(&self) -> SchemaType {
        match self {
            ParsedSchema::Avro(_) => SchemaType::Avro,
            ParsedSchema::Json(_) => SchemaType::Json,
            ParsedSchema::Protobuf(_) => SchemaType::Protobuf,
        }
    }

    /// Why `reader` cannot read all that `writer` wrote; empty when it can.
    pub fn read_problems(writer: &ParsedSchema, reader: &ParsedSchema) -> Vec<Problem> {
        match (writer, reader) {
            (ParsedSchema::Avro(w), ParsedSchema::Avro(r)) => avro::read_problems(w, r),
            (ParsedSchema::Protobuf(w), ParsedSchema::Protobuf(r)) => {
                protobuf::compatibility::problems(w, r)
            }
            (ParsedSchema::Json(w), ParsedSchema::Json(r)) if w == r => Vec::new(),
            (ParsedSchema::Json(_), ParsedSchema::Json(_)) => vec![Problem {
                error_type: "JSON_SCHEMA_RULES_NOT_SERVED",
                description: "this registry does not check JSON Schema changes yet: only an \
                              identical schema is compatible (set the subject's compatibility \
                              to NONE to register a change)"
                    .to_string(),
            }],
            _ => vec![Problem {
                error_type: "TYPE_MISMATCH",
                description: format!(
                    "The new schema is {}, the old one {}",
                    reader.schema_type().name(),
                    writer.schema_type().name()
                ),
            }],
        }
    }
}
