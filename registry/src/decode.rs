//! A record's data decoded with the schema its id names, for topics that check payloads too
//! (`shoal.schema.validation.decode`): Avro binary that decodes whole, JSON that the JSON
//! Schema accepts, Protobuf message indexes that name a message and bytes that parse as it.
//! The data is hostile: Avro's allocations are bounded, JSON's nesting (serde_json's limit),
//! Protobuf's recursion (prost's limit).

use std::sync::Once;

use apache_avro::reader::datum::GenericDatumReader;
use apache_avro::Schema;
use prost_reflect::{DynamicMessage, FileDescriptor, MessageDescriptor};

use crate::reference::Referenced;
use crate::{avro, protobuf, RegistryError, SchemaType};

/// The most one Avro string, bytes or collection in a record may claim: a length field is
/// trusted no further before its bytes are read.
const AVRO_ALLOCATION_MAX_BYTES: usize = 16 << 20;
/// The most message indexes a Protobuf record's prefix may give (nesting depth).
const PROTOBUF_INDEXES_MAX: usize = 32;

/// A schema made ready to decode data with.
pub enum Decoder {
    Avro {
        schema: Schema,
        referenced: Vec<Schema>,
    },
    Json(Box<jsonschema::Validator>),
    Protobuf(FileDescriptor),
}

impl Decoder {
    /// The stored schema `text` of `schema_type`, with the schemas its references name.
    pub fn new(
        schema_type: SchemaType,
        text: &str,
        references: &[Referenced<'_>],
    ) -> Result<Decoder, RegistryError> {
        match schema_type {
            SchemaType::Avro => {
                let texts: Vec<&str> = references.iter().map(|r| r.text).collect();
                let (schema, referenced) = avro::parse_with_referenced(text, &texts)?;
                Ok(Decoder::Avro { schema, referenced })
            }
            SchemaType::Json => {
                json_validator(text, references).map(|v| Decoder::Json(Box::new(v)))
            }
            SchemaType::Protobuf => protobuf::parse(text, references).map(Decoder::Protobuf),
        }
    }

    /// Ok when `data` (a record's key or value after the wire-format prefix) decodes whole.
    pub fn decode(&self, data: &[u8]) -> Result<(), String> {
        match self {
            Decoder::Avro { schema, referenced } => decode_avro(schema, referenced, data),
            Decoder::Json(validator) => {
                let value: serde_json::Value =
                    serde_json::from_slice(data).map_err(|e| format!("not JSON: {e}"))?;
                match validator.validate(&value) {
                    Ok(()) => Ok(()),
                    Err(error) => Err(format!("not valid: {error}")),
                }
            }
            Decoder::Protobuf(file) => decode_protobuf(file, data),
        }
    }
}

fn decode_avro(schema: &Schema, referenced: &[Schema], data: &[u8]) -> Result<(), String> {
    avro_value(schema, referenced, data).map(drop)
}

/// Avro `data` (a record's key or value after the wire-format prefix) decoded whole with
/// `schema`, whose named types may come from `referenced`.
pub fn avro_value(
    schema: &Schema,
    referenced: &[Schema],
    data: &[u8],
) -> Result<apache_avro::types::Value, String> {
    static BOUND: Once = Once::new();
    BOUND.call_once(|| {
        apache_avro::util::max_allocation_bytes(AVRO_ALLOCATION_MAX_BYTES);
    });
    let mut reader = Watched {
        data,
        ran_out: false,
    };
    let value = GenericDatumReader::builder(schema)
        .writer_schemata(referenced.iter().collect())
        .and_then(|builder| builder.build())
        .and_then(|datum| datum.read_value(&mut reader))
        .map_err(|e| e.to_string())?;
    // apache-avro reads a string or bytes cut short as null rather than failing.
    if reader.ran_out {
        return Err("the data ends inside a value".to_string());
    }
    match reader.data.len() {
        0 => Ok(value),
        left => Err(format!("{left} bytes left after the datum")),
    }
}

/// A reader of `data` that notes when it was asked for more than was left.
struct Watched<'a> {
    data: &'a [u8],
    ran_out: bool,
}

impl std::io::Read for Watched<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.len() > self.data.len() {
            self.ran_out = true;
        }
        self.data.read(buf)
    }
}

/// The JSON Schema's validator; referenced schemas are found by their reference's name,
/// resolved against a base of its own.
fn json_validator(
    text: &str,
    references: &[Referenced<'_>],
) -> Result<jsonschema::Validator, RegistryError> {
    const BASE: &str = "json-schema:///";
    let invalid = |e: String| RegistryError::InvalidSchema(format!("{text}, details: {e}"));
    let schema: serde_json::Value =
        serde_json::from_str(text).map_err(|e| invalid(e.to_string()))?;
    let mut builder = jsonschema::Registry::new();
    for reference in references {
        let contents: serde_json::Value =
            serde_json::from_str(reference.text).map_err(|e| invalid(e.to_string()))?;
        builder = builder
            .add(
                format!("{BASE}{}", reference.name),
                jsonschema::Resource::from_contents(contents),
            )
            .map_err(|e| invalid(e.to_string()))?;
    }
    let registry = builder.prepare().map_err(|e| invalid(e.to_string()))?;
    jsonschema::options()
        .with_base_uri(BASE)
        .with_registry(&registry)
        .build(&schema)
        .map_err(|e| invalid(e.to_string()))
}

/// Confluent's Protobuf data: the message's indexes (a zigzag varint count, then each index;
/// a lone 0 means the first message), then the message.
fn decode_protobuf(file: &FileDescriptor, data: &[u8]) -> Result<(), String> {
    protobuf_message(file, data).map(drop)
}

/// A Protobuf record's data decoded whole as the message its indexes name.
pub fn protobuf_message(file: &FileDescriptor, data: &[u8]) -> Result<DynamicMessage, String> {
    let (message, rest) = protobuf_message_type(file, data)?;
    let name = message.full_name().to_string();
    DynamicMessage::decode(message, rest).map_err(|e| format!("not a {name}: {e}"))
}

/// The message a Protobuf record's data is (its indexes, read from the front), and the bytes
/// after them.
pub fn protobuf_message_type<'a>(
    file: &FileDescriptor,
    data: &'a [u8],
) -> Result<(MessageDescriptor, &'a [u8]), String> {
    let mut rest = data;
    let count = zigzag(varint(&mut rest)?);
    let indexes: Vec<i64> = match count {
        0 => vec![0],
        n if n < 0 || n as usize > PROTOBUF_INDEXES_MAX => {
            return Err(format!("{n} message indexes"));
        }
        n => (0..n)
            .map(|_| varint(&mut rest).map(zigzag))
            .collect::<Result<_, _>>()?,
    };
    let message = message_at(file, &indexes)
        .ok_or_else(|| format!("message indexes {indexes:?} name no message"))?;
    Ok((message, rest))
}

fn message_at(file: &FileDescriptor, indexes: &[i64]) -> Option<MessageDescriptor> {
    let (first, nested) = indexes.split_first()?;
    let mut message = file.messages().nth(usize::try_from(*first).ok()?)?;
    for index in nested {
        let child = message
            .child_messages()
            .nth(usize::try_from(*index).ok()?)?;
        message = child;
    }
    Some(message)
}

fn varint(bytes: &mut &[u8]) -> Result<u64, String> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = bytes.split_first().ok_or("the message indexes end early")?;
        *bytes = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err("a message index is too long".to_string())
}

fn zigzag(value: u64) -> i64 {
    ((value >> 1) as i64) ^ -((value & 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn avro_data_decodes_whole_or_not_at_all() {
        let schema = r#"{"type":"record","name":"R","fields":[{"name":"a","type":"long"},{"name":"s","type":"string"}]}"#;
        let decoder = Decoder::new(SchemaType::Avro, schema, &[]).unwrap();
        // a = 1 (zigzag 2), s = "hi".
        assert!(decoder.decode(&[2, 4, b'h', b'i']).is_ok());
        assert!(decoder.decode(&[2, 4, b'h']).is_err());
        assert!(decoder.decode(&[2, 4, b'h', b'i', 0]).is_err());
        // A string claiming 2^40 bytes is refused before anything is allocated.
        assert!(decoder
            .decode(&[2, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40])
            .is_err());
    }

    #[test]
    fn json_data_must_satisfy_the_schema() {
        let schema =
            r#"{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}"#;
        let decoder = Decoder::new(SchemaType::Json, schema, &[]).unwrap();
        assert!(decoder.decode(br#"{"id": 3}"#).is_ok());
        assert!(decoder.decode(br#"{"id": "3"}"#).is_err());
        assert!(decoder.decode(b"{").is_err());
    }

    #[test]
    fn protobuf_data_names_its_message_and_parses_as_it() {
        let text = protobuf::canonical_text(
            "syntax = \"proto3\"; message A { string s = 1; } message B { int32 n = 1; message C { bool b = 1; } }",
        )
        .unwrap();
        let decoder = Decoder::new(SchemaType::Protobuf, &text, &[]).unwrap();
        // [0] (a lone 0), then A { s = "x" }.
        assert!(decoder.decode(&[0, 0x0a, 1, b'x']).is_ok());
        // [1, 0] as count 2 (zigzag 4), 1 (2), 0 (0): B.C { b = true }.
        assert!(decoder.decode(&[4, 2, 0, 0x08, 1]).is_ok());
        // A message that does not exist, and bytes that are not the message.
        assert!(decoder.decode(&[2, 10, 0x08, 1]).is_err());
        assert!(decoder.decode(&[0, 0x0a, 5, b'x']).is_err());
    }
}
