//! A record value's Avro schema as the table's value columns. Every schema version a topic's
//! records name is merged into the table's columns by field name: a field the table has keeps
//! its id (an int that became a long, or a float a double, is widened, as Iceberg allows); a
//! field it lacks becomes a new optional column with a new id, which older rows read as null.
//! Every value column is optional, so a later version may drop a field too.

use std::collections::HashMap;

use apache_avro::schema::{RecordSchema, Schema};

use crate::columns::{Column, ColumnType, Element, FieldId};
use crate::table_schema::{TableSchema, ValueColumns};

/// Records nest no deeper than this (a recursive Avro type nests without end).
const DEPTH_MAX: usize = 32;

/// The named types a schema (and the schemas it refers to) defines, by full name.
pub struct Names<'a>(HashMap<String, &'a Schema>);

impl<'a> Names<'a> {
    pub fn of(schemas: impl IntoIterator<Item = &'a Schema>) -> Names<'a> {
        let mut names = Names(HashMap::new());
        for schema in schemas {
            names.collect(schema, 0);
        }
        names
    }

    fn collect(&mut self, schema: &'a Schema, depth: usize) {
        if depth > DEPTH_MAX {
            return;
        }
        match schema {
            Schema::Record(record) => {
                self.0.insert(record.name.fullname(None), schema);
                for field in &record.fields {
                    self.collect(&field.schema, depth + 1);
                }
            }
            Schema::Enum(e) => {
                self.0.insert(e.name.fullname(None), schema);
            }
            Schema::Fixed(f) => {
                self.0.insert(f.name.fullname(None), schema);
            }
            Schema::Array(array) => self.collect(&array.items, depth + 1),
            Schema::Map(map) => self.collect(&map.types, depth + 1),
            Schema::Union(union) => {
                for variant in union.variants() {
                    self.collect(variant, depth + 1);
                }
            }
            _ => {}
        }
    }

    /// `schema`, or the named type it refers to.
    pub fn resolve(&self, schema: &'a Schema) -> Result<&'a Schema, String> {
        match schema {
            Schema::Ref { name } => {
                let name = name.fullname(None);
                self.0
                    .get(&name)
                    .copied()
                    .ok_or_else(|| format!("the type {name} is not defined"))
            }
            other => Ok(other),
        }
    }
}

/// The record `schema` is, when it is one (after following a reference).
pub fn as_record<'a>(schema: &'a Schema, names: &Names<'a>) -> Option<&'a RecordSchema> {
    match names.resolve(schema).ok()? {
        Schema::Record(record) => Some(record),
        _ => None,
    }
}

/// `table`'s schema after merging `record`'s fields into its value columns (unchanged when
/// the table has every field already); why not, when a field's type clashes with its column's
/// or has no Iceberg type here.
pub fn merge(
    table: &TableSchema,
    record: &RecordSchema,
    names: &Names<'_>,
) -> Result<TableSchema, String> {
    let ValueColumns::Fields(fields) = &table.value else {
        return Err("the table keeps values as bytes".into());
    };
    let mut merged = fields.clone();
    let mut next_id = table.last_column_id + 1;
    merge_fields(&mut merged, record, names, &mut next_id, 0)?;
    if merged == *fields {
        return Ok(table.clone());
    }
    Ok(TableSchema {
        schema_id: table.schema_id + 1,
        value: ValueColumns::Fields(merged),
        last_column_id: next_id - 1,
    })
}

fn merge_fields(
    columns: &mut Vec<Column>,
    record: &RecordSchema,
    names: &Names<'_>,
    next_id: &mut FieldId,
    depth: usize,
) -> Result<(), String> {
    for field in &record.fields {
        let within = |e: String| format!("{}.{}: {e}", record.name.name(), field.name);
        let Some(incoming) = column_type(&field.schema, names, depth + 1).map_err(within)? else {
            continue;
        };
        match columns.iter_mut().find(|c| c.name == field.name) {
            Some(column) => merge_type(&mut column.kind, incoming, next_id).map_err(within)?,
            None => columns.push(new_column(field.name.clone(), incoming, next_id)),
        }
    }
    Ok(())
}

/// A column the table did not have: optional, with the next ids.
fn new_column(name: String, mut kind: ColumnType, next_id: &mut FieldId) -> Column {
    let id = *next_id;
    *next_id += 1;
    kind.assign_ids(next_id);
    Column {
        id,
        name,
        required: false,
        kind,
    }
}

/// `existing` widened to hold `incoming` too.
fn merge_type(
    existing: &mut ColumnType,
    incoming: ColumnType,
    next_id: &mut FieldId,
) -> Result<(), String> {
    match (&mut *existing, incoming) {
        (ColumnType::Struct(columns), ColumnType::Struct(fields)) => {
            for field in fields {
                match columns.iter_mut().find(|c| c.name == field.name) {
                    Some(column) => merge_type(&mut column.kind, field.kind, next_id)?,
                    None => columns.push(new_column(field.name, field.kind, next_id)),
                }
            }
            Ok(())
        }
        (ColumnType::List(element), ColumnType::List(incoming)) => {
            merge_type(&mut element.kind, incoming.kind, next_id)
        }
        (ColumnType::Map(_, value), ColumnType::Map(_, incoming)) => {
            merge_type(&mut value.kind, incoming.kind, next_id)
        }
        (ColumnType::Int, ColumnType::Long) => {
            *existing = ColumnType::Long;
            Ok(())
        }
        (ColumnType::Float, ColumnType::Double) => {
            *existing = ColumnType::Double;
            Ok(())
        }
        (ColumnType::Long, ColumnType::Int) | (ColumnType::Double, ColumnType::Float) => Ok(()),
        (existing, incoming) if *existing == incoming => Ok(()),
        (existing, incoming) => Err(format!(
            "a {} now, the table's column is a {}",
            incoming.describe(),
            existing.describe()
        )),
    }
}

/// The column type of an Avro type, its ids all 0 (given when it joins a table); None for
/// `null`, which has no column.
pub fn column_type(
    schema: &Schema,
    names: &Names<'_>,
    depth: usize,
) -> Result<Option<ColumnType>, String> {
    if depth > DEPTH_MAX {
        return Err(format!("nested over {DEPTH_MAX} deep (a recursive type?)"));
    }
    let optional = |kind: ColumnType| Element {
        id: 0,
        required: false,
        kind,
    };
    Ok(Some(match names.resolve(schema)? {
        Schema::Null => return Ok(None),
        Schema::Union(union) => {
            let mut types = union.variants().iter().filter(|v| **v != Schema::Null);
            let (Some(only), None) = (types.next(), types.next()) else {
                return Err("a union of several types has no column type".into());
            };
            return column_type(only, names, depth + 1);
        }
        Schema::Boolean => ColumnType::Boolean,
        Schema::Int => ColumnType::Int,
        Schema::Long => ColumnType::Long,
        Schema::Float => ColumnType::Float,
        Schema::Double => ColumnType::Double,
        Schema::Bytes => ColumnType::Binary,
        Schema::String | Schema::Enum(_) | Schema::Uuid(_) => ColumnType::String,
        Schema::Fixed(fixed) => ColumnType::Fixed(fixed.size),
        Schema::Date => ColumnType::Date,
        Schema::TimeMillis | Schema::TimeMicros => ColumnType::Time,
        Schema::TimestampMillis | Schema::TimestampMicros | Schema::TimestampNanos => {
            ColumnType::TimestampTz
        }
        Schema::LocalTimestampMillis
        | Schema::LocalTimestampMicros
        | Schema::LocalTimestampNanos => ColumnType::Timestamp,
        Schema::Array(array) => match column_type(&array.items, names, depth + 1)? {
            Some(kind) => ColumnType::List(Box::new(optional(kind))),
            None => return Err("an array of nulls has no column type".into()),
        },
        Schema::Map(map) => match column_type(&map.types, names, depth + 1)? {
            Some(kind) => ColumnType::Map(
                Box::new(Element {
                    id: 0,
                    required: true,
                    kind: ColumnType::String,
                }),
                Box::new(optional(kind)),
            ),
            None => return Err("a map of nulls has no column type".into()),
        },
        Schema::Record(record) => {
            let mut fields = Vec::new();
            for field in &record.fields {
                if let Some(kind) = column_type(&field.schema, names, depth + 1)
                    .map_err(|e| format!("{}: {e}", field.name))?
                {
                    fields.push(Column {
                        id: 0,
                        name: field.name.clone(),
                        required: false,
                        kind,
                    });
                }
            }
            ColumnType::Struct(fields)
        }
        Schema::Decimal(_) | Schema::BigDecimal => {
            return Err("decimal fields are not written to tables yet".into())
        }
        Schema::Duration(_) => return Err("duration fields are not written to tables yet".into()),
        Schema::Ref { name } => return Err(format!("the type {} is not defined", name.name())),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table_schema::VALUE_ID;

    fn table_for(text: &str) -> TableSchema {
        let schema = Schema::parse_str(text).unwrap();
        let names = Names::of([&schema]);
        let record = as_record(&schema, &names).unwrap();
        merge(
            &TableSchema::new(ValueColumns::Fields(Vec::new())),
            record,
            &names,
        )
        .unwrap()
    }

    fn merged(table: &TableSchema, text: &str) -> Result<TableSchema, String> {
        let schema = Schema::parse_str(text).unwrap();
        let names = Names::of([&schema]);
        merge(table, as_record(&schema, &names).unwrap(), &names)
    }

    const V1: &str = r#"{"type":"record","name":"User","namespace":"a","fields":[
        {"name":"name","type":"string"},
        {"name":"age","type":"int"},
        {"name":"address","type":{"type":"record","name":"Address","fields":[
            {"name":"city","type":"string"}]}},
        {"name":"previous","type":{"type":"array","items":"Address"}},
        {"name":"nothing","type":"null"}]}"#;

    #[test]
    fn fields_become_columns_with_named_types_followed() {
        let table = table_for(V1);
        let ValueColumns::Fields(fields) = &table.value else {
            panic!()
        };
        let names: Vec<_> = fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["name", "age", "address", "previous"]);
        assert_eq!(fields[0].id, VALUE_ID + 1);
        let ColumnType::List(element) = &fields[3].kind else {
            panic!()
        };
        let ColumnType::Struct(city) = &element.kind else {
            panic!()
        };
        assert_eq!(
            (city[0].name.as_str(), &city[0].kind),
            ("city", &ColumnType::String)
        );
        assert_eq!(table.last_column_id, table.value_column().kind.max_id());
        // The same version again changes nothing.
        assert_eq!(merged(&table, V1).unwrap(), table);
    }

    #[test]
    fn a_new_version_keeps_ids_widens_and_adds() {
        let table = table_for(V1);
        let v2 = r#"{"type":"record","name":"User","namespace":"a","fields":[
            {"name":"name","type":"string"},
            {"name":"age","type":"long"},
            {"name":"email","type":["null","string"],"default":null}]}"#;
        let next = merged(&table, v2).unwrap();
        assert_eq!(next.schema_id, table.schema_id + 1);
        let (ValueColumns::Fields(before), ValueColumns::Fields(after)) =
            (&table.value, &next.value)
        else {
            panic!()
        };
        assert_eq!(after.len(), before.len() + 1);
        assert_eq!(after[1].id, before[1].id);
        assert_eq!(after[1].kind, ColumnType::Long);
        assert_eq!(after[4].name, "email");
        assert_eq!(after[4].id, table.last_column_id + 1);
        assert_eq!(next.last_column_id, table.last_column_id + 1);
        let clash = r#"{"type":"record","name":"User","fields":[{"name":"age","type":"string"}]}"#;
        let error = merged(&next, clash).unwrap_err();
        assert!(
            error.contains("User.age") && error.contains("long"),
            "{error}"
        );
    }

    #[test]
    fn types_without_a_column_are_refused_by_name() {
        let schema = r#"{"type":"record","name":"R","fields":[
            {"name":"either","type":["int","string"]}]}"#;
        let error = merged(&TableSchema::new(ValueColumns::Fields(Vec::new())), schema);
        assert!(error.unwrap_err().contains("R.either: a union"));
        let recursive = r#"{"type":"record","name":"Node","fields":[
            {"name":"next","type":["null","Node"]}]}"#;
        let error = merged(
            &TableSchema::new(ValueColumns::Fields(Vec::new())),
            recursive,
        );
        assert!(error.unwrap_err().contains("recursive"));
    }
}
