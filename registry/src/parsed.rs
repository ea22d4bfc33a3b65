//! A schema parsed in its format, whatever the format: what registration checks a new schema
//! is, and what compatibility compares.

use crate::compatibility::Problem;
use crate::json_schema::{self, JsonSchema};
use crate::reference::Referenced;
use crate::{avro, canonical, protobuf, RegistryError, SchemaType};

#[derive(Debug, Clone)]
pub enum ParsedSchema {
    Avro(apache_avro::Schema),
    /// A JSON Schema, with the schemas its references name.
    Json(JsonSchema),
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
            SchemaType::Json => JsonSchema::parse(text, references).map(ParsedSchema::Json),
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
            (ParsedSchema::Json(w), ParsedSchema::Json(r)) => {
                json_schema::compatibility::problems(w, r)
            }
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
