//! Records as an Iceberg table's columns, as the table writer makes them: the input's first
//! line a value schema (tried as Avro, JSON Schema and Protobuf), the rest a record's value
//! data. A schema with columns is merged into a new table's (and merged again: nothing
//! changes), the data decoded (Avro unions of several types tagged) and shredded into the
//! columns, and the rows written as a Parquet data file. Any input gets columns, a file or an
//! error, never a crash or an unbounded allocation.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use shoal_iceberg::avro_columns::{self, as_record, Names};
use shoal_iceberg::avro_unions;
use shoal_iceberg::columns::ColumnType;
use shoal_iceberg::shred::ValueLeaves;
use shoal_iceberg::table_schema::{TableSchema, ValueColumns};
use shoal_iceberg::{data_file, json_columns, protobuf_columns, Row};

fuzz_target!(|data: &[u8]| {
    let split = data.iter().position(|b| *b == b'\n').unwrap_or(data.len());
    let (schema_bytes, value) = (&data[..split], data.get(split + 1..).unwrap_or_default());
    let Ok(schema_text) = std::str::from_utf8(schema_bytes) else {
        return;
    };
    let empty = TableSchema::new(ValueColumns::Fields(Vec::new()));

    if let Ok((avro, referenced)) = shoal_registry::avro::parse_with_referenced(schema_text, &[]) {
        let names = Names::of(std::iter::once(&avro).chain(&referenced));
        if let Some(record) = as_record(&avro, &names) {
            if let Ok(table) = avro_columns::merge(&empty, record, &names) {
                let again = avro_columns::merge(&table, record, &names).expect("merged once");
                assert_eq!(again, table, "a schema merged twice changes nothing");
                let decoded = shoal_registry::decode::avro_value(&avro, &referenced, value)
                    .and_then(|v| avro_unions::tag_unions(v, &avro, &names));
                write_row(&table, decoded.ok());
            }
        }
    }

    if let Ok(json) = serde_json::from_str::<serde_json::Value>(schema_text) {
        if let Ok(table) = json_columns::merge(&empty, json_columns::Documents::alone(&json)) {
            if let ValueColumns::Fields(fields) = &table.value {
                let kind = ColumnType::Struct(fields.clone());
                let row = serde_json::from_slice(value)
                    .ok()
                    .and_then(|v| json_columns::value_of(&kind, v).ok());
                write_row(&table, row);
            }
        }
    }

    if let Ok(file) = shoal_registry::protobuf::parse(schema_text, &[]) {
        if let Ok((message, _)) = shoal_registry::decode::protobuf_message_type(&file, value) {
            if let Ok(table) = protobuf_columns::merge(&empty, &message) {
                let row = shoal_registry::decode::protobuf_message(&file, value)
                    .ok()
                    .and_then(|m| protobuf_columns::value_of(&m).ok());
                write_row(&table, row);
            }
        }
    }
});

/// Shreds a decoded value (if any) into `table`'s columns and writes it as a data file.
fn write_row(table: &TableSchema, value: Option<apache_avro::types::Value>) {
    let ValueColumns::Fields(fields) = &table.value else {
        return;
    };
    let mut leaves = ValueLeaves::new(fields);
    if leaves.push(value).is_err() {
        leaves.push(None).expect("a null value fits any columns");
    }
    let row = Row {
        partition: 0,
        offset: 0,
        timestamp_ms: 0,
        key: None,
        value: Some(Bytes::from_static(b"v")),
        headers: Vec::new(),
    };
    data_file::write(&[row], table, Some(&leaves)).expect("shredded rows write");
}
