//! Avro unions of several types (besides null) as Iceberg structs, as Iceberg's own Avro
//! conversion makes them: `tag`, the position of the value's type among the union's non-null
//! types, and `field0`, `field1`, ... one optional column per type, only the tag's set. A null
//! makes the whole struct null. A union of null and one type is that type (`avro_columns`).
//!
//! Decoded values carry the union's branch index, which counts null and needs the schema to
//! be read, so before shredding a value whose schema has such unions is rewritten into
//! records of that shape (`tag_unions`).

use apache_avro::schema::Schema;
use apache_avro::types::Value;

use crate::avro_columns::{Names, DEPTH_MAX};
use crate::columns::{Column, ColumnType};

/// The struct field that says which type a union's value is of.
pub const TAG: &str = "tag";

/// The struct field of a union's `position`th non-null type.
fn branch_name(position: usize) -> String {
    format!("field{position}")
}

/// The struct a union of `branches` (its non-null types' columns, in order) becomes.
pub fn union_struct(branches: Vec<ColumnType>) -> ColumnType {
    let tag = Column {
        id: 0,
        name: TAG.into(),
        required: false,
        kind: ColumnType::Int,
    };
    let fields = (branches.into_iter().enumerate()).map(|(position, kind)| Column {
        id: 0,
        name: branch_name(position),
        required: false,
        kind,
    });
    ColumnType::Struct(std::iter::once(tag).chain(fields).collect())
}

/// A union's types other than null.
pub fn non_null(union: &[Schema]) -> impl Iterator<Item = &Schema> {
    union.iter().filter(|v| **v != Schema::Null)
}

/// Whether `schema` has a union of several types anywhere (then its values need
/// `tag_unions`).
pub fn has_tagged_unions(schema: &Schema, names: &Names<'_>) -> bool {
    fn visit(schema: &Schema, names: &Names<'_>, depth: usize) -> bool {
        if depth > DEPTH_MAX {
            return false;
        }
        match names.resolve(schema) {
            Ok(Schema::Union(union)) => {
                non_null(union.variants()).count() > 1
                    || (union.variants().iter()).any(|v| visit(v, names, depth + 1))
            }
            Ok(Schema::Record(record)) => {
                (record.fields.iter()).any(|field| visit(&field.schema, names, depth + 1))
            }
            Ok(Schema::Array(array)) => visit(&array.items, names, depth + 1),
            Ok(Schema::Map(map)) => visit(&map.types, names, depth + 1),
            _ => false,
        }
    }
    visit(schema, names, 0)
}

/// `value`, decoded with `schema`, with each value of a union of several types made the
/// record its struct column holds.
pub fn tag_unions(value: Value, schema: &Schema, names: &Names<'_>) -> Result<Value, String> {
    tag(value, schema, names, 0)
}

fn tag(value: Value, schema: &Schema, names: &Names<'_>, depth: usize) -> Result<Value, String> {
    if depth > DEPTH_MAX {
        return Err(format!("nested over {DEPTH_MAX} deep"));
    }
    let mismatch = || "a value does not match its schema".to_string();
    Ok(match (names.resolve(schema)?, value) {
        (Schema::Union(union), Value::Union(index, inner)) => {
            let variants = union.variants();
            let branch = usize::try_from(index).ok().and_then(|i| variants.get(i));
            let branch = branch.ok_or_else(mismatch)?;
            let inner = tag(*inner, branch, names, depth + 1)?;
            if non_null(variants).count() <= 1 || *branch == Schema::Null {
                Value::Union(index, Box::new(inner))
            } else {
                let position = non_null(&variants[..index as usize]).count();
                Value::Record(vec![
                    (TAG.into(), Value::Int(position as i32)),
                    (branch_name(position), inner),
                ])
            }
        }
        (Schema::Record(record), Value::Record(fields)) if fields.len() == record.fields.len() => {
            Value::Record(
                (fields.into_iter().zip(&record.fields))
                    .map(|((name, field), schema)| {
                        Ok((name, tag(field, &schema.schema, names, depth + 1)?))
                    })
                    .collect::<Result<_, String>>()?,
            )
        }
        (Schema::Array(array), Value::Array(items)) => Value::Array(
            (items.into_iter())
                .map(|item| tag(item, &array.items, names, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        (Schema::Map(map), Value::Map(entries)) => Value::Map(
            (entries.into_iter())
                .map(|(key, item)| Ok((key, tag(item, &map.types, names, depth + 1)?)))
                .collect::<Result<_, String>>()?,
        ),
        (Schema::Union(_) | Schema::Record(_), _) => return Err(mismatch()),
        (_, value) => value,
    })
}

#[cfg(test)]
mod tests {
    use parquet::file::reader::{FileReader, SerializedFileReader};

    use super::*;
    use crate::shred::ValueLeaves;
    use crate::table_schema::ValueColumns;

    const EVENT: &str = r#"{"type":"record","name":"Event","fields":[
        {"name":"id","type":"long"},
        {"name":"payload","type":["null","string","long",
            {"type":"record","name":"Point","fields":[{"name":"x","type":"int"}]}]},
        {"name":"history","type":{"type":"array","items":["int","string"]}},
        {"name":"simple","type":["null","string"]}]}"#;

    #[test]
    fn a_union_of_several_types_is_a_struct_of_tag_and_a_field_each() {
        let table = crate::avro_columns::table_for(EVENT);
        let ValueColumns::Fields(fields) = &table.value else {
            panic!()
        };
        let json = serde_json::to_string(&table.to_json()).unwrap();
        let payload = &fields.iter().find(|f| f.name == "payload").unwrap().kind;
        let ColumnType::Struct(members) = payload else {
            panic!("{json}")
        };
        let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["tag", "field0", "field1", "field2"]);
        assert_eq!(members[1].kind, ColumnType::String);
        assert_eq!(members[2].kind, ColumnType::Long);
        assert!(matches!(members[3].kind, ColumnType::Struct(_)));
        let simple = &fields.iter().find(|f| f.name == "simple").unwrap().kind;
        assert_eq!(*simple, ColumnType::String);
    }

    #[test]
    fn decoded_values_take_their_branch_as_tag_and_field() {
        let schema = Schema::parse_str(EVENT).unwrap();
        let names = Names::of([&schema]);
        assert!(has_tagged_unions(&schema, &names));
        let event = |payload: Value, history: Vec<Value>| {
            Value::Record(vec![
                ("id".into(), Value::Long(1)),
                ("payload".into(), payload),
                ("history".into(), Value::Array(history)),
                (
                    "simple".into(),
                    Value::Union(1, Box::new(Value::String("s".into()))),
                ),
            ])
        };
        let point = Value::Record(vec![("x".into(), Value::Int(3))]);
        let tagged = tag_unions(
            event(
                Value::Union(3, Box::new(point.clone())),
                vec![
                    Value::Union(1, Box::new(Value::String("a".into()))),
                    Value::Union(0, Box::new(Value::Int(7))),
                ],
            ),
            &schema,
            &names,
        )
        .unwrap();
        let Value::Record(fields) = &tagged else {
            panic!()
        };
        // The record is the third non-null type: tag 2, field2.
        assert_eq!(
            fields[1].1,
            Value::Record(vec![
                ("tag".into(), Value::Int(2)),
                ("field2".into(), point)
            ])
        );
        assert_eq!(
            fields[2].1,
            Value::Array(vec![
                Value::Record(vec![
                    ("tag".into(), Value::Int(1)),
                    ("field1".into(), Value::String("a".into()))
                ]),
                Value::Record(vec![
                    ("tag".into(), Value::Int(0)),
                    ("field0".into(), Value::Int(7))
                ]),
            ])
        );
        // A union of null and one type keeps its value; a null stays null.
        assert_eq!(
            fields[3].1,
            Value::Union(1, Box::new(Value::String("s".into())))
        );
        let null = tag_unions(
            event(Value::Union(0, Box::new(Value::Null)), vec![]),
            &schema,
            &names,
        )
        .unwrap();
        let Value::Record(fields) = &null else {
            panic!()
        };
        assert_eq!(fields[1].1, Value::Union(0, Box::new(Value::Null)));

        // Shredded into the table's columns, they read back.
        let table = crate::avro_columns::table_for(EVENT);
        let ValueColumns::Fields(columns) = &table.value else {
            panic!()
        };
        let mut leaves = ValueLeaves::new(columns);
        leaves.push(Some(tagged)).unwrap();
        leaves.push(Some(null)).unwrap();
        let rows: Vec<crate::Row> = (0..2)
            .map(|offset| crate::Row {
                partition: 0,
                offset,
                timestamp_ms: 0,
                key: None,
                value: None,
                headers: Vec::new(),
            })
            .collect();
        let file = crate::data_file::write(&rows, &table, Some(&leaves)).unwrap();
        let reader = SerializedFileReader::new(bytes::Bytes::from(file.bytes)).unwrap();
        let read: Vec<String> = (reader.get_row_iter(None).unwrap())
            .map(|row| row.unwrap().to_string())
            .collect();
        assert!(
            read[0].contains(
                "payload: {tag: 2, field0: null, field1: null, field2: {x: 3}}, \
                 history: [{tag: 1, field0: null, field1: \"a\"}, {tag: 0, field0: 7, field1: null}]"
            ),
            "{}",
            read[0]
        );
        assert!(
            read[1].contains("payload: null, history: []"),
            "{}",
            read[1]
        );
        // A value that does not match its schema is refused.
        let wrong = Value::Record(vec![
            ("id".into(), Value::Long(1)),
            ("payload".into(), Value::Union(9, Box::new(Value::Null))),
        ]);
        assert!(tag_unions(wrong, &schema, &names).is_err());
        let plain = Schema::parse_str(
            r#"{"type":"record","name":"P","fields":[{"name":"a","type":["null","int"]}]}"#,
        )
        .unwrap();
        assert!(!has_tagged_unions(&plain, &Names::of([&plain])));
    }
}
