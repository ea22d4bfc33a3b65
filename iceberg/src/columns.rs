//! A table's columns as one tree, from which both of their declarations are made: the Iceberg
//! schema in the table's metadata, and the Parquet message type of its data files, carrying
//! the same field ids (which is how Iceberg readers match a file's columns to the table's).
//! The tree is also read back from a table's metadata, so a writer that restarts keeps the
//! ids the table gave its columns.

use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::IcebergError;

/// An Iceberg field id.
pub type FieldId = i32;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub id: FieldId,
    pub name: String,
    pub required: bool,
    pub kind: ColumnType,
}

/// A list's element, or a map's key or value: a field without a name of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Element {
    pub id: FieldId,
    pub required: bool,
    pub kind: ColumnType,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnType {
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Date,
    /// Microseconds since midnight.
    Time,
    /// Microseconds since the epoch, without and with a time zone (UTC).
    Timestamp,
    TimestampTz,
    String,
    Binary,
    Fixed(usize),
    /// Precision and scale.
    Decimal(u32, u32),
    Struct(Vec<Column>),
    List(Box<Element>),
    Map(Box<Element>, Box<Element>),
}

/// The most digits a decimal column holds (Iceberg's limit: what 16 bytes hold).
pub const DECIMAL_PRECISION_MAX: u32 = 38;

/// A decimal's unscaled value from its big-endian two's complement bytes (none is 0); None
/// past 16 bytes, more than `DECIMAL_PRECISION_MAX` digits need.
pub fn unscaled_decimal(bytes: &[u8]) -> Option<i128> {
    if bytes.len() > 16 {
        return None;
    }
    let negative = bytes.first().is_some_and(|b| b & 0x80 != 0);
    let mut wide = [if negative { 0xff } else { 0 }; 16];
    wide[16 - bytes.len()..].copy_from_slice(bytes);
    Some(i128::from_be_bytes(wide))
}

/// How a decimal's unscaled value is stored, by its precision (as Iceberg's spec has it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecimalStorage {
    Int32,
    Int64,
    /// Big-endian two's complement in the fewest bytes that hold the precision.
    Fixed(usize),
}

pub fn decimal_storage(precision: u32) -> DecimalStorage {
    match precision {
        0..=9 => DecimalStorage::Int32,
        10..=18 => DecimalStorage::Int64,
        _ => DecimalStorage::Fixed(
            (1..=16usize)
                .find(|bytes| {
                    // The largest magnitude `bytes` hold, against the largest `precision` digits.
                    let max = (1u128 << (8 * bytes - 1)) - 1;
                    10u128
                        .checked_pow(precision)
                        .is_none_or(|limit| max >= limit - 1)
                })
                .unwrap_or(16),
        ),
    }
}

/// What one leaf of the Parquet file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Physical {
    Boolean,
    Int32,
    Int64,
    Float,
    Double,
    ByteArray,
    FixedLenByteArray,
}

impl ColumnType {
    /// A list of optional `element`s, as a value schema's arrays become (ids given later).
    pub fn list_of(element: ColumnType) -> ColumnType {
        ColumnType::List(Box::new(Element {
            id: 0,
            required: false,
            kind: element,
        }))
    }

    /// A map from strings to optional `value`s, as a value schema's maps become (ids given
    /// later).
    pub fn string_map_of(value: ColumnType) -> ColumnType {
        let key = Element {
            id: 0,
            required: true,
            kind: ColumnType::String,
        };
        let value = Element {
            id: 0,
            required: false,
            kind: value,
        };
        ColumnType::Map(Box::new(key), Box::new(value))
    }

    /// Iceberg's name of the type, for messages.
    pub fn describe(&self) -> String {
        match self.primitive_name() {
            Some(name) => name,
            None => match self {
                ColumnType::Struct(_) => "struct".into(),
                ColumnType::List(_) => "list".into(),
                _ => "map".into(),
            },
        }
    }

    fn primitive_name(&self) -> Option<String> {
        Some(match self {
            ColumnType::Boolean => "boolean".into(),
            ColumnType::Int => "int".into(),
            ColumnType::Long => "long".into(),
            ColumnType::Float => "float".into(),
            ColumnType::Double => "double".into(),
            ColumnType::Date => "date".into(),
            ColumnType::Time => "time".into(),
            ColumnType::Timestamp => "timestamp".into(),
            ColumnType::TimestampTz => "timestamptz".into(),
            ColumnType::String => "string".into(),
            ColumnType::Binary => "binary".into(),
            ColumnType::Fixed(length) => format!("fixed[{length}]"),
            ColumnType::Decimal(precision, scale) => format!("decimal({precision}, {scale})"),
            _ => return None,
        })
    }

    /// The leaf a primitive type is stored in: its physical type, as the Parquet message type
    /// names it, and the annotation after the field's name.
    fn parquet_leaf(&self) -> Option<(Physical, String, String)> {
        let plain = |physical, name: &str| (physical, name.to_string(), String::new());
        let annotated = |physical, name: &str, annotation: &str| {
            (physical, name.to_string(), format!(" ({annotation})"))
        };
        Some(match self {
            ColumnType::Boolean => plain(Physical::Boolean, "boolean"),
            ColumnType::Int => plain(Physical::Int32, "int32"),
            ColumnType::Long => plain(Physical::Int64, "int64"),
            ColumnType::Float => plain(Physical::Float, "float"),
            ColumnType::Double => plain(Physical::Double, "double"),
            ColumnType::Date => annotated(Physical::Int32, "int32", "DATE"),
            ColumnType::Time => annotated(Physical::Int64, "int64", "TIME(MICROS,false)"),
            ColumnType::Timestamp => annotated(Physical::Int64, "int64", "TIMESTAMP(MICROS,false)"),
            ColumnType::TimestampTz => {
                annotated(Physical::Int64, "int64", "TIMESTAMP(MICROS,true)")
            }
            ColumnType::String => annotated(Physical::ByteArray, "binary", "STRING"),
            ColumnType::Binary => plain(Physical::ByteArray, "binary"),
            ColumnType::Fixed(length) => plain(
                Physical::FixedLenByteArray,
                &format!("fixed_len_byte_array({length})"),
            ),
            ColumnType::Decimal(precision, scale) => {
                let annotation = format!("DECIMAL({precision},{scale})");
                match decimal_storage(*precision) {
                    DecimalStorage::Int32 => annotated(Physical::Int32, "int32", &annotation),
                    DecimalStorage::Int64 => annotated(Physical::Int64, "int64", &annotation),
                    DecimalStorage::Fixed(length) => annotated(
                        Physical::FixedLenByteArray,
                        &format!("fixed_len_byte_array({length})"),
                        &annotation,
                    ),
                }
            }
            _ => return None,
        })
    }

    /// How many Parquet leaves the type takes.
    pub fn leaf_count(&self) -> usize {
        match self {
            ColumnType::Struct(fields) => fields.iter().map(|f| f.kind.leaf_count()).sum(),
            ColumnType::List(element) => element.kind.leaf_count(),
            ColumnType::Map(key, value) => key.kind.leaf_count() + value.kind.leaf_count(),
            _ => 1,
        }
    }

    /// The physical type of each leaf, depth first.
    pub fn leaves(&self, out: &mut Vec<Physical>) {
        match self {
            ColumnType::Struct(fields) => fields.iter().for_each(|f| f.kind.leaves(out)),
            ColumnType::List(element) => element.kind.leaves(out),
            ColumnType::Map(key, value) => {
                key.kind.leaves(out);
                value.kind.leaves(out);
            }
            primitive => out.extend(primitive.parquet_leaf().map(|(physical, _, _)| physical)),
        }
    }

    /// The type as Iceberg's table metadata writes it.
    pub fn to_json(&self) -> Value {
        if let Some(name) = self.primitive_name() {
            return json!(name);
        }
        match self {
            ColumnType::Struct(fields) => json!({
                "type": "struct",
                "fields": fields.iter().map(Column::to_json).collect::<Vec<_>>(),
            }),
            ColumnType::List(element) => json!({
                "type": "list",
                "element-id": element.id,
                "element-required": element.required,
                "element": element.kind.to_json(),
            }),
            ColumnType::Map(key, value) => json!({
                "type": "map",
                "key-id": key.id,
                "key": key.kind.to_json(),
                "value-id": value.id,
                "value-required": value.required,
                "value": value.kind.to_json(),
            }),
            _ => unreachable!("primitive types are named above"),
        }
    }

    /// A type read from table metadata; one this writer does not write is refused.
    pub fn from_json(json: &Value) -> Result<ColumnType, IcebergError> {
        let unknown = || IcebergError::Metadata(format!("a column of type {json} is not written"));
        if let Some(name) = json.as_str() {
            if let Some(arguments) =
                (name.strip_prefix("decimal(")).and_then(|rest| rest.strip_suffix(')'))
            {
                let (precision, scale) = arguments.split_once(',').ok_or_else(unknown)?;
                let number = |text: &str| text.trim().parse::<u32>().map_err(|_| unknown());
                let (precision, scale) = (number(precision)?, number(scale)?);
                if !(1..=DECIMAL_PRECISION_MAX).contains(&precision) || scale > precision {
                    return Err(unknown());
                }
                return Ok(ColumnType::Decimal(precision, scale));
            }
            return Ok(match name {
                "boolean" => ColumnType::Boolean,
                "int" => ColumnType::Int,
                "long" => ColumnType::Long,
                "float" => ColumnType::Float,
                "double" => ColumnType::Double,
                "date" => ColumnType::Date,
                "time" => ColumnType::Time,
                "timestamp" => ColumnType::Timestamp,
                "timestamptz" => ColumnType::TimestampTz,
                "string" => ColumnType::String,
                "binary" => ColumnType::Binary,
                fixed => {
                    let length = (fixed.strip_prefix("fixed["))
                        .and_then(|rest| rest.strip_suffix(']'))
                        .and_then(|n| n.parse().ok())
                        .ok_or_else(unknown)?;
                    ColumnType::Fixed(length)
                }
            });
        }
        let element =
            |id: &str, required: &str, kind: &str| -> Result<Box<Element>, IcebergError> {
                Ok(Box::new(Element {
                    id: field_id(&json[id])?,
                    required: json[required].as_bool().unwrap_or(true),
                    kind: ColumnType::from_json(&json[kind])?,
                }))
            };
        match json["type"].as_str() {
            Some("struct") => Ok(ColumnType::Struct(
                (json["fields"].as_array().ok_or_else(unknown)?)
                    .iter()
                    .map(Column::from_json)
                    .collect::<Result<_, _>>()?,
            )),
            Some("list") => Ok(ColumnType::List(element(
                "element-id",
                "element-required",
                "element",
            )?)),
            // A map's keys are always required.
            Some("map") => Ok(ColumnType::Map(
                element("key-id", "key-required", "key")?,
                element("value-id", "value-required", "value")?,
            )),
            _ => Err(unknown()),
        }
    }

    /// Renumbers every field below this type from `next_id` on (a type made from a value
    /// schema carries no ids of its own until it joins a table).
    pub fn assign_ids(&mut self, next_id: &mut FieldId) {
        let mut take = || {
            let id = *next_id;
            *next_id += 1;
            id
        };
        match self {
            ColumnType::Struct(fields) => {
                for field in fields.iter_mut() {
                    field.id = take();
                }
                for field in fields.iter_mut() {
                    field.kind.assign_ids(next_id);
                }
            }
            ColumnType::List(element) => {
                element.id = take();
                element.kind.assign_ids(next_id);
            }
            ColumnType::Map(key, value) => {
                key.id = take();
                value.id = take();
                key.kind.assign_ids(next_id);
                value.kind.assign_ids(next_id);
            }
            _ => {}
        }
    }

    /// The highest field id below this type (0 when none).
    pub fn max_id(&self) -> FieldId {
        match self {
            ColumnType::Struct(fields) => fields
                .iter()
                .map(|f| f.id.max(f.kind.max_id()))
                .max()
                .unwrap_or(0),
            ColumnType::List(element) => element.id.max(element.kind.max_id()),
            ColumnType::Map(key, value) => key
                .id
                .max(value.id)
                .max(key.kind.max_id())
                .max(value.kind.max_id()),
            _ => 0,
        }
    }
}

fn field_id(json: &Value) -> Result<FieldId, IcebergError> {
    (json.as_i64())
        .and_then(|id| FieldId::try_from(id).ok())
        .ok_or_else(|| IcebergError::Metadata(format!("a field id {json} is not an int")))
}

impl Column {
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "name": self.name,
            "required": self.required,
            "type": self.kind.to_json(),
        })
    }

    pub fn from_json(json: &Value) -> Result<Column, IcebergError> {
        Ok(Column {
            id: field_id(&json["id"])?,
            name: (json["name"].as_str())
                .ok_or_else(|| IcebergError::Metadata(format!("a field without a name: {json}")))?
                .to_string(),
            required: json["required"].as_bool().unwrap_or(false),
            kind: ColumnType::from_json(&json["type"])?,
        })
    }

    /// Appends the column as a Parquet message type's field.
    pub fn write_parquet(&self, out: &mut String) {
        write_parquet_field(out, &self.name, self.id, self.required, &self.kind);
    }
}

/// A field's name as the Parquet message type can say it. Iceberg readers match a file's
/// columns to the table's by field id, so a name with other characters than letters, digits
/// and `_` (a JSON property may have any) is written as a safe one made unique by its id.
fn parquet_name(name: &str, id: FieldId) -> std::borrow::Cow<'_, str> {
    let plain = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        return std::borrow::Cow::Borrowed(name);
    }
    let safe: String = (name.chars())
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    std::borrow::Cow::Owned(format!("_{safe}_{id}"))
}

fn write_parquet_field(
    out: &mut String,
    name: &str,
    id: FieldId,
    required: bool,
    kind: &ColumnType,
) {
    let repetition = if required { "required" } else { "optional" };
    let name = parquet_name(name, id);
    if let Some((_, physical, annotation)) = kind.parquet_leaf() {
        let _ = writeln!(out, "{repetition} {physical} {name}{annotation} = {id};");
        return;
    }
    match kind {
        ColumnType::Struct(fields) => {
            let _ = writeln!(out, "{repetition} group {name} = {id} {{");
            fields.iter().for_each(|f| f.write_parquet(out));
        }
        ColumnType::List(element) => {
            let _ = writeln!(
                out,
                "{repetition} group {name} (LIST) = {id} {{\nrepeated group list {{"
            );
            write_parquet_field(out, "element", element.id, element.required, &element.kind);
            out.push_str("}\n");
        }
        ColumnType::Map(key, value) => {
            let _ = writeln!(
                out,
                "{repetition} group {name} (MAP) = {id} {{\nrepeated group key_value {{"
            );
            write_parquet_field(out, "key", key.id, true, &key.kind);
            write_parquet_field(out, "value", value.id, value.required, &value.kind);
            out.push_str("}\n");
        }
        _ => unreachable!("primitive types are written above"),
    }
    out.push_str("}\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested() -> ColumnType {
        let mut kind = ColumnType::Struct(vec![
            Column {
                id: 0,
                name: "tags".into(),
                required: false,
                kind: ColumnType::List(Box::new(Element {
                    id: 0,
                    required: false,
                    kind: ColumnType::String,
                })),
            },
            Column {
                id: 0,
                name: "scores".into(),
                required: false,
                kind: ColumnType::Map(
                    Box::new(Element {
                        id: 0,
                        required: true,
                        kind: ColumnType::String,
                    }),
                    Box::new(Element {
                        id: 0,
                        required: false,
                        kind: ColumnType::Fixed(4),
                    }),
                ),
            },
            Column {
                id: 0,
                name: "at".into(),
                required: false,
                kind: ColumnType::TimestampTz,
            },
        ]);
        kind.assign_ids(&mut 20);
        kind
    }

    #[test]
    fn types_round_trip_through_metadata_and_ids_are_unique() {
        let kind = nested();
        assert_eq!(ColumnType::from_json(&kind.to_json()).unwrap(), kind);
        assert_eq!(kind.max_id(), 25);
        assert_eq!(kind.leaf_count(), 4);
        let mut leaves = Vec::new();
        kind.leaves(&mut leaves);
        assert_eq!(
            leaves,
            [
                Physical::ByteArray,
                Physical::ByteArray,
                Physical::FixedLenByteArray,
                Physical::Int64
            ]
        );
        assert_eq!(
            ColumnType::from_json(&json!("decimal(9,2)")).unwrap(),
            ColumnType::Decimal(9, 2)
        );
        assert!(ColumnType::from_json(&json!("decimal(40, 2)")).is_err());
        assert!(ColumnType::from_json(&json!("uuid")).is_err());
    }

    #[test]
    fn the_parquet_declaration_parses_with_the_same_ids() {
        let column = Column {
            id: 10,
            name: "value".into(),
            required: false,
            kind: nested(),
        };
        let mut text = String::from("message table {\n");
        column.write_parquet(&mut text);
        text.push_str("}\n");
        let parsed = parquet::schema::parser::parse_message_type(&text).unwrap();
        let mut ids = Vec::new();
        fn walk(t: &parquet::schema::types::Type, out: &mut Vec<i32>) {
            if t.get_basic_info().has_id() {
                out.push(t.get_basic_info().id());
            }
            if t.is_group() {
                t.get_fields().iter().for_each(|f| walk(f, out));
            }
        }
        walk(&parsed, &mut ids);
        ids.sort();
        assert_eq!(ids, [10, 20, 21, 22, 23, 24, 25]);
        // Any name a JSON property may have still makes a message type.
        for name in ["}n", "first name", "9lives", "", "a;b = 3 {"] {
            let odd = Column {
                id: 11,
                name: name.into(),
                required: false,
                kind: ColumnType::Struct(vec![Column {
                    id: 12,
                    name: name.into(),
                    required: false,
                    kind: ColumnType::Long,
                }]),
            };
            let mut text = String::from("message table {\n");
            odd.write_parquet(&mut text);
            text.push_str("}\n");
            parquet::schema::parser::parse_message_type(&text).expect(&text);
        }
    }
}
