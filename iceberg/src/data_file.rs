//! A Parquet data file holding rows, one row group, zstd-compressed, its columns carrying the
//! table's field ids (`table_schema`): the `kafka` struct's leaves written from the rows, then
//! the value's, from the rows' bytes or from the value fields' leaves (`shred`).

use std::sync::Arc;

use parquet::basic::{Compression, ZstdLevel};
use parquet::data_type::{
    BoolType, ByteArray, ByteArrayType, DoubleType, FixedLenByteArrayType, FloatType, Int32Type,
    Int64Type,
};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::{SerializedFileWriter, SerializedRowGroupWriter};
use parquet::schema::parser::parse_message_type;

use crate::column_metrics::ColumnMetrics;
use crate::shred::{Leaf, LeafValues, Level, ValueLeaves};
use crate::table_schema::{TableSchema, ValueColumns};
use crate::{IcebergError, Row};

/// How data files are written. No dictionaries: keys and values are mostly distinct, and
/// interning each one cost more than the rest of the encoding (a profile of the writer
/// catching up); zstd finds what repeats.
pub fn properties() -> Arc<WriterProperties> {
    Arc::new(
        WriterProperties::builder()
            .set_dictionary_enabled(false)
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .set_created_by(format!("shoal {}", env!("CARGO_PKG_VERSION")))
            .build(),
    )
}

/// A Parquet data file's bytes, with what its manifest entry says of it.
pub struct WrittenFile {
    pub bytes: Vec<u8>,
    pub record_count: i64,
    pub metrics: ColumnMetrics,
}

/// The Parquet file for `rows` in a table of `schema`; `values` are the rows' value fields
/// when the table has them.
pub fn write(
    rows: &[Row],
    schema: &TableSchema,
    values: Option<&ValueLeaves>,
) -> Result<WrittenFile, IcebergError> {
    let message = schema.parquet_message();
    let parquet_schema = Arc::new(parse_message_type(&message)?);
    let mut out = Vec::new();
    let mut writer = SerializedFileWriter::new(&mut out, parquet_schema, properties())?;
    let mut group = writer.next_row_group()?;
    let partitions: Vec<i32> = rows.iter().map(|r| r.partition).collect();
    let offsets: Vec<i64> = rows.iter().map(|r| r.offset).collect();
    let micros: Vec<i64> = rows.iter().map(|r| r.timestamp_ms * 1_000).collect();
    write_i32(&mut group, &partitions)?;
    write_i64(&mut group, &offsets)?;
    write_i64(&mut group, &micros)?;
    let (keys, key_levels) = optional_bytes(rows.iter().map(|r| r.key.as_ref()));
    write_bytes(&mut group, &keys, &key_levels, None)?;
    let headers = HeaderColumns::of(rows);
    write_bytes(
        &mut group,
        &headers.keys,
        &headers.key_definitions,
        Some(&headers.repetitions),
    )?;
    write_bytes(
        &mut group,
        &headers.values,
        &headers.value_definitions,
        Some(&headers.repetitions),
    )?;
    match (&schema.value, values) {
        (ValueColumns::Binary, None) => {
            let (values, value_levels) = optional_bytes(rows.iter().map(|r| r.value.as_ref()));
            write_bytes(&mut group, &values, &value_levels, None)?;
        }
        (ValueColumns::Fields(_), Some(values)) => {
            for leaf in &values.leaves {
                write_leaf(&mut group, leaf)?;
            }
        }
        _ => {
            return Err(IcebergError::Metadata(
                "value fields are written with a table that has them".into(),
            ))
        }
    }
    group.close()?;
    let metadata = writer.close()?;
    Ok(WrittenFile {
        bytes: out,
        record_count: metadata.file_metadata().num_rows(),
        metrics: ColumnMetrics::of_parquet(&metadata),
    })
}

/// An optional leaf's present values and each row's definition level (1 present, 0 null).
fn optional_bytes<'a>(
    items: impl Iterator<Item = Option<&'a bytes::Bytes>>,
) -> (Vec<ByteArray>, Vec<Level>) {
    let mut values = Vec::new();
    let mut levels = Vec::new();
    for item in items {
        levels.push(Level::from(item.is_some()));
        if let Some(bytes) = item {
            values.push(ByteArray::from(bytes.clone()));
        }
    }
    (values, levels)
}

/// The two leaves of `kafka.headers` (a list of key/value structs). A row without headers
/// has an empty list (defined to level 1); each header repeats the list (repetition 1 after
/// the row's first) and defines its key to level 2, its value to 3 (2 when null).
struct HeaderColumns {
    keys: Vec<ByteArray>,
    values: Vec<ByteArray>,
    key_definitions: Vec<Level>,
    value_definitions: Vec<Level>,
    repetitions: Vec<Level>,
}

impl HeaderColumns {
    fn of(rows: &[Row]) -> HeaderColumns {
        let mut columns = HeaderColumns {
            keys: Vec::new(),
            values: Vec::new(),
            key_definitions: Vec::new(),
            value_definitions: Vec::new(),
            repetitions: Vec::new(),
        };
        for row in rows {
            if row.headers.is_empty() {
                columns.key_definitions.push(1);
                columns.value_definitions.push(1);
                columns.repetitions.push(0);
                continue;
            }
            for (i, (key, value)) in row.headers.iter().enumerate() {
                columns.repetitions.push(Level::from(i > 0));
                columns.key_definitions.push(2);
                columns.keys.push(ByteArray::from(key.as_bytes().to_vec()));
                columns
                    .value_definitions
                    .push(if value.is_some() { 3 } else { 2 });
                if let Some(value) = value {
                    columns.values.push(ByteArray::from(value.clone()));
                }
            }
        }
        columns
    }
}

type Group<'a, 'b> = SerializedRowGroupWriter<'a, &'b mut Vec<u8>>;

fn next_column<'a>(
    group: &'a mut Group<'_, '_>,
) -> Result<parquet::file::writer::SerializedColumnWriter<'a>, IcebergError> {
    group
        .next_column()?
        .ok_or_else(|| IcebergError::Metadata("the Parquet schema has fewer columns".into()))
}

fn write_i32(group: &mut Group<'_, '_>, values: &[i32]) -> Result<(), IcebergError> {
    let mut column = next_column(group)?;
    column
        .typed::<Int32Type>()
        .write_batch(values, None, None)?;
    Ok(column.close()?)
}

fn write_i64(group: &mut Group<'_, '_>, values: &[i64]) -> Result<(), IcebergError> {
    let mut column = next_column(group)?;
    column
        .typed::<Int64Type>()
        .write_batch(values, None, None)?;
    Ok(column.close()?)
}

fn write_bytes(
    group: &mut Group<'_, '_>,
    values: &[ByteArray],
    definitions: &[Level],
    repetitions: Option<&[Level]>,
) -> Result<(), IcebergError> {
    let mut column = next_column(group)?;
    column
        .typed::<ByteArrayType>()
        .write_batch(values, Some(definitions), repetitions)?;
    Ok(column.close()?)
}

fn write_leaf(group: &mut Group<'_, '_>, leaf: &Leaf) -> Result<(), IcebergError> {
    let mut column = next_column(group)?;
    let definitions = Some(leaf.definitions.as_slice());
    let repetitions = Some(leaf.repetitions.as_slice());
    match &leaf.values {
        LeafValues::Boolean(v) => {
            column
                .typed::<BoolType>()
                .write_batch(v, definitions, repetitions)
        }
        LeafValues::Int32(v) => {
            column
                .typed::<Int32Type>()
                .write_batch(v, definitions, repetitions)
        }
        LeafValues::Int64(v) => {
            column
                .typed::<Int64Type>()
                .write_batch(v, definitions, repetitions)
        }
        LeafValues::Float(v) => {
            column
                .typed::<FloatType>()
                .write_batch(v, definitions, repetitions)
        }
        LeafValues::Double(v) => {
            column
                .typed::<DoubleType>()
                .write_batch(v, definitions, repetitions)
        }
        LeafValues::Bytes(v) => v.write_with(|values| {
            column
                .typed::<ByteArrayType>()
                .write_batch(values, definitions, repetitions)
        }),
        LeafValues::Fixed(v) => {
            (column.typed::<FixedLenByteArrayType>()).write_batch(v, definitions, repetitions)
        }
    }?;
    Ok(column.close()?)
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;

    use super::*;

    fn row(offset: i64, headers: Vec<(String, Option<Bytes>)>) -> Row {
        Row {
            partition: 2,
            offset,
            timestamp_ms: 1_700_000_000_000 + offset,
            key: (offset % 2 == 0).then(|| Bytes::from(format!("k{offset}"))),
            value: Some(Bytes::from(format!("v{offset}"))),
            headers,
        }
    }

    #[test]
    fn rows_read_back_with_their_headers_and_nulls() {
        let rows = vec![
            row(10, vec![]),
            row(
                11,
                vec![
                    ("trace".into(), Some(Bytes::from_static(b"t1"))),
                    ("empty".into(), None),
                ],
            ),
            Row {
                value: None,
                ..row(12, vec![("one".into(), Some(Bytes::from_static(b"1")))])
            },
        ];
        let file = write(&rows, &TableSchema::new(ValueColumns::Binary), None)
            .unwrap()
            .bytes;
        let reader = SerializedFileReader::new(Bytes::from(file)).unwrap();
        assert_eq!(reader.metadata().file_metadata().num_rows(), 3);
        let read: Vec<String> = reader
            .get_row_iter(None)
            .unwrap()
            .map(|r| r.unwrap().to_string())
            .collect();
        assert_eq!(read.len(), 3);
        assert!(
            read[0].contains("offset: 10") && read[0].contains("headers: []"),
            "{}",
            read[0]
        );
        assert!(read[1].contains("key: null"), "{}", read[1]);
        assert!(
            read[1].contains("{key: \"trace\"") && read[1].contains("value: null}"),
            "{}",
            read[1]
        );
        let last = reader.get_row_iter(None).unwrap().nth(2).unwrap().unwrap();
        let (name, value) = last.get_column_iter().last().unwrap();
        assert_eq!((name.as_str(), value), ("value", &Field::Null));
    }

    #[test]
    fn value_fields_read_back_nested() {
        use apache_avro::types::Value as Avro;

        let schema = crate::avro_columns::table_for(
            r#"{"type":"record","name":"User","fields":[
                {"name":"name","type":"string"},
                {"name":"tags","type":{"type":"array","items":"string"}},
                {"name":"scores","type":{"type":"map","values":"int"}},
                {"name":"home","type":["null",{"type":"record","name":"Home","fields":[
                    {"name":"city","type":"string"}]}]}]}"#,
        );
        let ValueColumns::Fields(fields) = &schema.value else {
            panic!()
        };
        let mut values = ValueLeaves::new(fields);
        let user = |name: &str, tags: &[&str], city: Option<&str>| {
            Avro::Record(vec![
                ("name".into(), Avro::String(name.into())),
                (
                    "tags".into(),
                    Avro::Array(tags.iter().map(|t| Avro::String(t.to_string())).collect()),
                ),
                (
                    "scores".into(),
                    Avro::Map([("a".to_string(), Avro::Int(1))].into_iter().collect()),
                ),
                (
                    "home".into(),
                    match city {
                        Some(city) => Avro::Union(
                            1,
                            Box::new(Avro::Record(vec![(
                                "city".into(),
                                Avro::String(city.into()),
                            )])),
                        ),
                        None => Avro::Union(0, Box::new(Avro::Null)),
                    },
                ),
            ])
        };
        values
            .push(Some(user("ann", &["x", "y"], Some("Oslo"))))
            .unwrap();
        values.push(Some(user("bob", &[], None))).unwrap();
        values.push(None).unwrap();
        let rows: Vec<Row> = (0..3).map(|i| row(i, vec![])).collect();
        let file = write(&rows, &schema, Some(&values)).unwrap().bytes;
        let reader = SerializedFileReader::new(Bytes::from(file)).unwrap();
        let read: Vec<String> = reader
            .get_row_iter(None)
            .unwrap()
            .map(|r| r.unwrap().to_string())
            .collect();
        assert!(
            read[0].contains(r#"value: {name: "ann", tags: ["x", "y"], scores: {"a" -> 1}, home: {city: "Oslo"}}"#),
            "{}",
            read[0]
        );
        assert!(
            read[1].contains(r#"value: {name: "bob", tags: [], scores: {"a" -> 1}, home: null}"#),
            "{}",
            read[1]
        );
        assert!(read[2].contains("value: null"), "{}", read[2]);
        // Once the file is written and the leaves dropped, their byte buffers are spare again
        // (parquet held copies of the values' handles in its statistics until then).
        drop(values);
        let spare: Vec<Vec<u8>> = (0..3).map(|_| crate::spare_buffers::take()).collect();
        assert!(
            spare.iter().filter(|b| b.capacity() > 0).count() >= 3,
            "the name, tag, map key and city leaves' buffers came back"
        );
    }

    #[test]
    fn decimals_are_stored_by_precision_and_read_back() {
        use apache_avro::types::Value as Avro;

        let schema = crate::avro_columns::table_for(
            r#"{"type":"record","name":"Money","fields":[
                {"name":"small","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},
                {"name":"mid","type":{"type":"bytes","logicalType":"decimal","precision":18,"scale":4}},
                {"name":"big","type":{"type":"fixed","name":"F","size":16,"logicalType":"decimal","precision":38,"scale":0}}]}"#,
        );
        assert!(schema.to_json().to_string().contains(r#""decimal(38, 0)""#));
        let ValueColumns::Fields(fields) = &schema.value else {
            panic!()
        };
        let decimal = |unscaled: i128| {
            let bytes = unscaled.to_be_bytes();
            Avro::Decimal(apache_avro::Decimal::from(&bytes[..]))
        };
        let mut values = ValueLeaves::new(fields);
        let record = |small, mid, big| {
            Avro::Record(vec![
                ("small".into(), decimal(small)),
                ("mid".into(), decimal(mid)),
                ("big".into(), decimal(big)),
            ])
        };
        values
            .push(Some(record(-12345, 987654321, -(10i128.pow(37)))))
            .unwrap();
        // Wider than the column's precision: refused, nothing left behind.
        assert!(values.push(Some(record(10i128.pow(9), 0, 0))).is_err());
        let rows = vec![row(0, vec![])];
        let file = write(&rows, &schema, Some(&values)).unwrap().bytes;
        let reader = SerializedFileReader::new(Bytes::from(file)).unwrap();
        let read = reader
            .get_row_iter(None)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .to_string();
        assert!(read.contains("small: -123.45"), "{read}");
        assert!(read.contains("mid: 98765.4321"), "{read}");
        assert!(
            read.contains("big: -10000000000000000000000000000000000000"),
            "{read}"
        );
        assert_eq!(
            crate::columns::decimal_storage(19),
            crate::columns::DecimalStorage::Fixed(9)
        );
    }

    #[test]
    fn durations_keep_their_bytes_and_big_decimals_their_text() {
        use apache_avro::types::Value as Avro;

        let schema = crate::avro_columns::table_for(
            r#"{"type":"record","name":"Span","fields":[
                {"name":"length","type":{"type":"fixed","name":"D","size":12,"logicalType":"duration"}},
                {"name":"amount","type":{"type":"bytes","logicalType":"big-decimal"}}]}"#,
        );
        assert!(schema
            .to_json()
            .to_string()
            .contains(r#""type":"fixed[12]""#));
        let ValueColumns::Fields(fields) = &schema.value else {
            panic!()
        };
        let mut values = ValueLeaves::new(fields);
        let duration = apache_avro::Duration::new(
            apache_avro::Months::new(1),
            apache_avro::Days::new(2),
            apache_avro::Millis::new(3),
        );
        let amount: apache_avro::BigDecimal = "-12.345".parse().unwrap();
        values
            .push(Some(Avro::Record(vec![
                ("length".into(), Avro::Duration(duration)),
                ("amount".into(), Avro::BigDecimal(amount)),
            ])))
            .unwrap();
        let file = write(&[row(0, vec![])], &schema, Some(&values))
            .unwrap()
            .bytes;
        let reader = SerializedFileReader::new(Bytes::from(file)).unwrap();
        let read = (reader.get_row_iter(None).unwrap())
            .next()
            .unwrap()
            .unwrap()
            .to_string();
        assert!(
            read.contains(
                "value: {length: [1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0], amount: \"-12.345\"}"
            ),
            "{read}"
        );
    }
}
