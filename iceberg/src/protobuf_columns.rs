//! A Protobuf message type as the table's value columns (merged by `evolve`), and decoded
//! messages as the rows' values in the form the shredder takes (`apache_avro`'s values).
//!
//! | Protobuf | Iceberg |
//! |---|---|
//! | double, float, bool, string, bytes | double, float, boolean, string, binary |
//! | int32, sint32, sfixed32 | int |
//! | int64, sint64, sfixed64, uint32, fixed32, uint64, fixed64 | long (a uint64 past 2^63 is refused) |
//! | enum | string (the value's name) |
//! | message | struct |
//! | google.protobuf.Timestamp | timestamptz |
//! | repeated | list |
//! | map<K, V> | map<string, V> (keys as text) |
//!
//! A proto3 field without presence reads as its default when unset, as Protobuf readers see
//! it; a field with presence (a message, `optional`, a oneof member) is null when unset.

use apache_avro::types::Value as AvroValue;
use prost_reflect::{
    DynamicMessage, FieldDescriptor, Kind, MapKey, MessageDescriptor, ReflectMessage, Value,
};

use crate::columns::{Column, ColumnType};
use crate::evolve;
use crate::table_schema::TableSchema;

/// Messages nest no deeper than this (a recursive message nests without end).
const DEPTH_MAX: usize = 32;
const TIMESTAMP: &str = "google.protobuf.Timestamp";

/// `table`'s schema after merging `message`'s fields into its value columns.
pub fn merge(table: &TableSchema, message: &MessageDescriptor) -> Result<TableSchema, String> {
    let fields = message_fields(message, 0).map_err(|e| format!("{}.{e}", message.name()))?;
    evolve::merge(table, message.name(), fields)
}

fn message_fields(message: &MessageDescriptor, depth: usize) -> Result<Vec<Column>, String> {
    if depth > DEPTH_MAX {
        return Err(format!(
            "nested over {DEPTH_MAX} deep (a recursive message?)"
        ));
    }
    message
        .fields()
        .map(|field| {
            Ok(Column {
                id: 0,
                name: field.name().to_string(),
                required: false,
                kind: field_type(&field, depth).map_err(|e| format!("{}: {e}", field.name()))?,
            })
        })
        .collect()
}

fn field_type(field: &FieldDescriptor, depth: usize) -> Result<ColumnType, String> {
    if field.is_map() {
        let Kind::Message(entry) = field.kind() else {
            return Err("a map without its entry".into());
        };
        let value = kind_type(&entry.map_entry_value_field().kind(), depth + 1)?;
        return Ok(ColumnType::string_map_of(value));
    }
    let kind = kind_type(&field.kind(), depth)?;
    Ok(match field.is_list() {
        true => ColumnType::list_of(kind),
        false => kind,
    })
}

fn kind_type(kind: &Kind, depth: usize) -> Result<ColumnType, String> {
    Ok(match kind {
        Kind::Double => ColumnType::Double,
        Kind::Float => ColumnType::Float,
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => ColumnType::Int,
        Kind::Int64
        | Kind::Sint64
        | Kind::Sfixed64
        | Kind::Uint32
        | Kind::Fixed32
        | Kind::Uint64
        | Kind::Fixed64 => ColumnType::Long,
        Kind::Bool => ColumnType::Boolean,
        Kind::String | Kind::Enum(_) => ColumnType::String,
        Kind::Bytes => ColumnType::Binary,
        Kind::Message(message) if message.full_name() == TIMESTAMP => ColumnType::TimestampTz,
        Kind::Message(message) => ColumnType::Struct(message_fields(message, depth + 1)?),
    })
}

/// A decoded message as a row's value.
pub fn value_of(message: &DynamicMessage) -> Result<AvroValue, String> {
    let descriptor = message.descriptor();
    let mut fields = Vec::with_capacity(descriptor.fields().len());
    for field in descriptor.fields() {
        let value = match field.supports_presence() && !message.has_field(&field) {
            true => AvroValue::Null,
            false => field_value(&field.kind(), &message.get_field(&field))
                .map_err(|e| format!("{}: {e}", field.name()))?,
        };
        fields.push((field.name().to_string(), value));
    }
    Ok(AvroValue::Record(fields))
}

fn field_value(kind: &Kind, value: &Value) -> Result<AvroValue, String> {
    Ok(match value {
        Value::Bool(b) => AvroValue::Boolean(*b),
        Value::I32(i) => AvroValue::Int(*i),
        Value::I64(l) => AvroValue::Long(*l),
        Value::U32(u) => AvroValue::Long(i64::from(*u)),
        Value::U64(u) => AvroValue::Long(
            i64::try_from(*u).map_err(|_| format!("{u} does not fit a long column"))?,
        ),
        Value::F32(f) => AvroValue::Float(*f),
        Value::F64(d) => AvroValue::Double(*d),
        Value::String(s) => AvroValue::String(s.clone()),
        Value::Bytes(b) => AvroValue::Bytes(b.to_vec()),
        Value::EnumNumber(n) => AvroValue::String(match kind {
            Kind::Enum(e) => (e.get_value(*n)).map_or_else(|| n.to_string(), |v| v.name().into()),
            _ => n.to_string(),
        }),
        Value::Message(m) if m.descriptor().full_name() == TIMESTAMP => {
            let seconds = m.get_field_by_name("seconds").and_then(|v| v.as_i64());
            let nanos = m.get_field_by_name("nanos").and_then(|v| v.as_i32());
            let micros = seconds.unwrap_or(0).saturating_mul(1_000_000)
                + i64::from(nanos.unwrap_or(0) / 1_000);
            AvroValue::TimestampMicros(micros)
        }
        Value::Message(m) => value_of(m)?,
        Value::List(items) => AvroValue::Array(
            (items.iter())
                .map(|item| field_value(kind, item))
                .collect::<Result<_, _>>()?,
        ),
        Value::Map(entries) => {
            let value_kind = match kind {
                Kind::Message(entry) => entry.map_entry_value_field().kind(),
                _ => return Err("a map without its entry".into()),
            };
            AvroValue::Map(
                (entries.iter())
                    .map(|(key, item)| Ok((key_text(key), field_value(&value_kind, item)?)))
                    .collect::<Result<_, String>>()?,
            )
        }
    })
}

fn key_text(key: &MapKey) -> String {
    match key {
        MapKey::Bool(b) => b.to_string(),
        MapKey::I32(i) => i.to_string(),
        MapKey::I64(i) => i.to_string(),
        MapKey::U32(u) => u.to_string(),
        MapKey::U64(u) => u.to_string(),
        MapKey::String(s) => s.clone(),
    }
}
