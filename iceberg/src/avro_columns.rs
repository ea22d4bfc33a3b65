//! A record value's Avro schema as the table's value columns, merged into the table's by
//! `evolve`.

use std::collections::HashMap;

use apache_avro::schema::{RecordSchema, Schema};

use crate::avro_unions;
use crate::columns::{Column, ColumnType, DECIMAL_PRECISION_MAX};
use crate::evolve;
use crate::table_schema::TableSchema;

/// Records nest no deeper than this (a recursive Avro type nests without end).
pub(crate) const DEPTH_MAX: usize = 32;

/// An Avro duration's size: a fixed of months, days and milliseconds.
pub const DURATION_BYTES: usize = 12;

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

/// `table`'s schema after merging `record`'s fields into its value columns (`evolve::merge`);
/// why not, when a field has no Iceberg type here or clashes with its column.
pub fn merge(
    table: &TableSchema,
    record: &RecordSchema,
    names: &Names<'_>,
) -> Result<TableSchema, String> {
    let record_name = record.name.name();
    let mut incoming = Vec::new();
    for field in &record.fields {
        let kind = column_type(&field.schema, names, 1)
            .map_err(|e| format!("{record_name}.{}: {e}", field.name))?;
        if let Some(kind) = kind {
            incoming.push(Column {
                id: 0,
                name: field.name.clone(),
                required: false,
                kind,
            });
        }
    }
    evolve::merge(table, record_name, incoming)
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
    Ok(Some(match names.resolve(schema)? {
        Schema::Null => return Ok(None),
        Schema::Union(union) => {
            let mut types = avro_unions::non_null(union.variants());
            if let (Some(only), None) = (types.next(), types.next()) {
                return column_type(only, names, depth + 1);
            }
            let mut branches = Vec::new();
            for branch in avro_unions::non_null(union.variants()) {
                branches.extend(column_type(branch, names, depth + 1)?);
            }
            avro_unions::union_struct(branches)
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
            Some(kind) => ColumnType::list_of(kind),
            None => return Err("an array of nulls has no column type".into()),
        },
        Schema::Map(map) => match column_type(&map.types, names, depth + 1)? {
            Some(kind) => ColumnType::string_map_of(kind),
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
        Schema::Decimal(decimal) => {
            let precision = u32::try_from(decimal.precision).unwrap_or(u32::MAX);
            let scale = u32::try_from(decimal.scale).unwrap_or(u32::MAX);
            if !(1..=DECIMAL_PRECISION_MAX).contains(&precision) || scale > precision {
                return Err(format!(
                    "decimal({precision}, {scale}) is past Iceberg's {DECIMAL_PRECISION_MAX} digits"
                ));
            }
            ColumnType::Decimal(precision, scale)
        }
        // Each value has a scale of its own, which no Iceberg decimal column has: its text.
        Schema::BigDecimal => ColumnType::String,
        // Iceberg has no interval type; its own Avro conversion keeps the 12 bytes (months,
        // days and milliseconds, each a little-endian u32) as they are.
        Schema::Duration(_) => ColumnType::Fixed(DURATION_BYTES),
        Schema::Ref { name } => return Err(format!("the type {} is not defined", name.name())),
    }))
}

/// The table a first Avro record schema (its JSON text) makes, for tests.
#[cfg(test)]
pub(crate) fn table_for(text: &str) -> TableSchema {
    let schema = Schema::parse_str(text).unwrap();
    let names = Names::of([&schema]);
    let record = as_record(&schema, &names).unwrap();
    merge(
        &TableSchema::new(crate::table_schema::ValueColumns::Fields(Vec::new())),
        record,
        &names,
    )
    .unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table_schema::{ValueColumns, VALUE_ID};

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
            {"name":"nothing","type":{"type":"array","items":"null"}}]}"#;
        let error = merged(&TableSchema::new(ValueColumns::Fields(Vec::new())), schema);
        assert!(error.unwrap_err().contains("R.nothing: an array of nulls"));
        let recursive = r#"{"type":"record","name":"Node","fields":[
            {"name":"next","type":["null","Node"]}]}"#;
        let error = merged(
            &TableSchema::new(ValueColumns::Fields(Vec::new())),
            recursive,
        );
        assert!(error.unwrap_err().contains("recursive"));
    }
}
