//! A value schema's fields merged into a table's value columns. Every schema version a
//! topic's records name is merged by field name: a field the table has keeps its id (an int
//! that became a long, or a float a double, is widened, as Iceberg allows); a field it lacks
//! becomes a new optional column with a new id, which older rows read as null. Every value
//! column is optional, so a later version may drop a field too.

use crate::columns::{Column, ColumnType, FieldId};
use crate::table_schema::{TableSchema, ValueColumns};

/// `table`'s schema after merging `incoming` (a value schema's fields as columns, their ids
/// not given yet) into its value columns: unchanged when it has them all; a new schema version
/// otherwise. `record_name` names the value schema in messages.
pub fn merge(
    table: &TableSchema,
    record_name: &str,
    incoming: Vec<Column>,
) -> Result<TableSchema, String> {
    let ValueColumns::Fields(fields) = &table.value else {
        return Err("the table keeps values as bytes".into());
    };
    let mut merged = fields.clone();
    let mut next_id = table.last_column_id + 1;
    for field in incoming {
        match merged.iter_mut().find(|c| c.name == field.name) {
            Some(column) => merge_type(&mut column.kind, field.kind, &mut next_id)
                .map_err(|e| format!("{record_name}.{}: {e}", field.name))?,
            None => merged.push(new_column(field.name, field.kind, &mut next_id)),
        }
    }
    if merged == *fields {
        return Ok(table.clone());
    }
    Ok(TableSchema {
        schema_id: table.schema_id + 1,
        value: ValueColumns::Fields(merged),
        last_column_id: next_id - 1,
    })
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
        // A decimal may gain digits, never change its scale.
        (ColumnType::Decimal(precision, scale), ColumnType::Decimal(wider, same))
            if *scale == same =>
        {
            *precision = (*precision).max(wider);
            Ok(())
        }
        (existing, incoming) if *existing == incoming => Ok(()),
        (existing, incoming) => Err(format!(
            "a {} now, the table's column is a {}",
            incoming.describe(),
            existing.describe()
        )),
    }
}
