use apache_avro::types::Value as Avro;
use bytes::Bytes;

use super::*;
use crate::compact::merge_files;
use crate::data_file::write;
use crate::shred::ValueLeaves;
use crate::table_schema::{TableSchema, ValueColumns};
use crate::Row;

/// The `kafka` struct's field ids (`table_schema::kafka_column`) and the binary value's.
const PARTITION: i32 = 2;
const OFFSET: i32 = 3;
const TIMESTAMP: i32 = 4;
const KEY: i32 = 5;
const HEADER_KEY: i32 = 8;
const HEADER_VALUE: i32 = 9;
const VALUE: i32 = 10;

fn row(partition: i32, offset: i64, key: Option<&str>) -> Row {
    Row {
        partition,
        offset,
        timestamp_ms: 1_700_000_000_000 + offset,
        key: key.map(|k| Bytes::from(k.to_string())),
        value: Some(Bytes::from(vec![0xff; 20 + offset as usize])),
        headers: vec![("h".into(), None), ("trace".into(), Some(Bytes::from("x")))],
    }
}

fn binary_file(rows: &[Row]) -> crate::data_file::WrittenFile {
    write(rows, &TableSchema::new(ValueColumns::Binary), None).unwrap()
}

#[test]
fn a_binary_tables_file_has_counts_for_every_leaf_and_bounds_outside_lists() {
    let long_key = "customer-0000000001-eu-west";
    let rows = [
        row(2, 40, Some(long_key)),
        row(0, 41, None),
        row(1, 39, Some("customer-0000000001-eu-east")),
    ];
    let metrics = binary_file(&rows).metrics;
    for id in [PARTITION, OFFSET, TIMESTAMP, KEY, VALUE] {
        assert_eq!(metrics.value_counts[&id], 3, "{id}");
    }
    // Two headers a row: each header leaf has six values.
    assert_eq!(metrics.value_counts[&HEADER_KEY], 6);
    assert_eq!(metrics.null_value_counts[&HEADER_VALUE], 3);
    assert_eq!(metrics.null_value_counts[&KEY], 1);
    assert_eq!(metrics.null_value_counts[&OFFSET], 0);

    assert_eq!(metrics.lower_bounds[&PARTITION], 0i32.to_le_bytes());
    assert_eq!(metrics.upper_bounds[&PARTITION], 2i32.to_le_bytes());
    assert_eq!(metrics.lower_bounds[&OFFSET], 39i64.to_le_bytes());
    assert_eq!(metrics.upper_bounds[&OFFSET], 41i64.to_le_bytes());
    let micros = |offset: i64| ((1_700_000_000_000 + offset) * 1_000).to_le_bytes();
    assert_eq!(metrics.lower_bounds[&TIMESTAMP], micros(39));
    assert_eq!(metrics.upper_bounds[&TIMESTAMP], micros(41));
    // Binary bounds are cut to 16 bytes; the upper one raised so it stays above the key.
    assert_eq!(metrics.lower_bounds[&KEY], b"customer-0000000");
    assert_eq!(metrics.upper_bounds[&KEY], b"customer-0000001");
    // Every value starts with 16 0xff bytes: no 16-byte upper bound is above them.
    assert_eq!(metrics.lower_bounds[&VALUE], [0xff; 16]);
    assert!(!metrics.upper_bounds.contains_key(&VALUE));
    // Header leaves are inside a list: counts only.
    for id in [HEADER_KEY, HEADER_VALUE] {
        assert!(!metrics.lower_bounds.contains_key(&id), "{id}");
    }
}

#[test]
fn a_merged_file_is_bounded_by_every_file_it_holds() {
    let files: Vec<Bytes> = [
        vec![row(0, 10, Some("m")), row(0, 11, Some("n"))],
        vec![row(3, 2, Some("a"))],
        vec![row(1, 50, None)],
    ]
    .iter()
    .map(|rows| Bytes::from(binary_file(rows).bytes))
    .collect();
    let merged = merge_files(&files).unwrap();
    assert_eq!(merged.record_count, 4);
    let metrics = merged.metrics;
    assert_eq!(metrics.value_counts[&OFFSET], 4);
    assert_eq!(metrics.null_value_counts[&KEY], 1);
    assert_eq!(metrics.lower_bounds[&OFFSET], 2i64.to_le_bytes());
    assert_eq!(metrics.upper_bounds[&OFFSET], 50i64.to_le_bytes());
    assert_eq!(metrics.upper_bounds[&PARTITION], 3i32.to_le_bytes());
    assert_eq!(metrics.lower_bounds[&KEY], b"a");
    assert_eq!(metrics.upper_bounds[&KEY], b"n");
}

#[test]
fn value_fields_are_bounded_in_icebergs_single_value_form() {
    let schema = crate::avro_columns::table_for(
        r#"{"type":"record","name":"Order","fields":[
            {"name":"n","type":"int"},
            {"name":"total","type":"long"},
            {"name":"ratio","type":"float"},
            {"name":"score","type":"double"},
            {"name":"paid","type":"boolean"},
            {"name":"city","type":"string"},
            {"name":"note","type":["null","string"]},
            {"name":"tags","type":{"type":"array","items":"string"}},
            {"name":"price","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},
            {"name":"huge","type":{"type":"fixed","name":"F","size":16,"logicalType":"decimal","precision":38,"scale":0}}]}"#,
    );
    let ValueColumns::Fields(fields) = &schema.value else {
        panic!()
    };
    let id = |name: &str| fields.iter().find(|f| f.name == name).unwrap().id;
    let decimal = |unscaled: i128| {
        let bytes = unscaled.to_be_bytes();
        Avro::Decimal(apache_avro::Decimal::from(&bytes[..]))
    };
    let order = |n: i32, score: f64, paid: bool, city: &str, price: i128, huge: i128| {
        Avro::Record(vec![
            ("n".into(), Avro::Int(n)),
            ("total".into(), Avro::Long(i64::from(n) * 1_000_000_000_000)),
            ("ratio".into(), Avro::Float(n as f32 / 4.0)),
            ("score".into(), Avro::Double(score)),
            ("paid".into(), Avro::Boolean(paid)),
            ("city".into(), Avro::String(city.into())),
            ("note".into(), Avro::Union(0, Box::new(Avro::Null))),
            (
                "tags".into(),
                Avro::Array(vec![Avro::String(city.to_uppercase())]),
            ),
            ("price".into(), decimal(price)),
            ("huge".into(), decimal(huge)),
        ])
    };
    let mut values = ValueLeaves::new(fields);
    let orders = [
        order(-3, f64::NAN, true, "Zürich", 128, -(10i128.pow(37))),
        order(7, -0.5, true, "Ålesund-øst-øst-øst", -129, 5),
        order(2, 2.25, true, "Bergen", 0, 1),
    ];
    for value in orders {
        values.push(Some(value)).unwrap();
    }
    let rows: Vec<Row> = (0..3).map(|offset| row(0, offset, None)).collect();
    let metrics = write(&rows, &schema, Some(&values)).unwrap().metrics;
    let bounds = |name: &str| {
        (
            metrics.lower_bounds.get(&id(name)).cloned(),
            metrics.upper_bounds.get(&id(name)).cloned(),
        )
    };
    let both = |low: Vec<u8>, high: Vec<u8>| (Some(low), Some(high));
    assert_eq!(
        bounds("n"),
        both((-3i32).to_le_bytes().into(), 7i32.to_le_bytes().into())
    );
    assert_eq!(
        bounds("total"),
        both(
            (-3_000_000_000_000i64).to_le_bytes().into(),
            7_000_000_000_000i64.to_le_bytes().into()
        )
    );
    assert_eq!(
        bounds("ratio"),
        both(
            (-0.75f32).to_le_bytes().into(),
            1.75f32.to_le_bytes().into()
        )
    );
    // NaN is no bound: Iceberg counts NaNs apart.
    assert_eq!(metrics.nan_value_counts[&id("score")], 1);
    assert_eq!(metrics.nan_value_counts[&id("ratio")], 0);
    assert!(!metrics.nan_value_counts.contains_key(&id("n")));
    assert_eq!(
        bounds("score"),
        both((-0.5f64).to_le_bytes().into(), 2.25f64.to_le_bytes().into())
    );
    assert_eq!(bounds("paid"), both(vec![1], vec![1]));
    // Strings compare by their UTF-8 bytes; cut to 16 characters, the upper one raised.
    assert_eq!(
        bounds("city"),
        both("Bergen".into(), "Ålesund-øst-øst.".into())
    );
    assert_eq!(bounds("note"), (None, None));
    assert_eq!(metrics.null_value_counts[&id("note")], 3);
    // Decimals: the unscaled value in the fewest two's complement bytes, big-endian.
    assert_eq!(bounds("price"), both(vec![0xff, 0x7f], vec![0x00, 0x80]));
    let huge_low = fewest_big_endian(-(10i128.pow(37)));
    assert_eq!(bounds("huge"), both(huge_low.clone(), vec![5]));
    assert_eq!(signed_big_endian(&huge_low), Some(-(10i128.pow(37))));
    // A list's elements: counts, no bounds.
    let tags = fields.iter().find(|f| f.name == "tags").unwrap();
    let element = tags.kind.max_id();
    assert_eq!(metrics.value_counts[&element], 3);
    assert!(!metrics.lower_bounds.contains_key(&element));
}

#[test]
fn cut_bounds_are_raised_past_the_characters_that_have_no_next() {
    assert_eq!(raised_bytes(&[1, 0xff, 0xff]), Some(vec![2]));
    assert_eq!(raised_bytes(&[0xff, 0xff]), None);
    assert_eq!(raised_string(&['a', '\u{d7ff}']), Some("a\u{e000}".into()));
    assert_eq!(
        raised_string(&['a', char::MAX]),
        Some("b".as_bytes().to_vec())
    );
    assert_eq!(raised_string(&[char::MAX]), None);
    for (value, bytes) in [
        (0, vec![0]),
        (-1, vec![0xff]),
        (127, vec![0x7f]),
        (128, vec![0, 0x80]),
        (-128, vec![0x80]),
        (-129, vec![0xff, 0x7f]),
    ] {
        assert_eq!(fewest_big_endian(value), bytes, "{value}");
        assert_eq!(signed_big_endian(&bytes), Some(value));
    }
    assert_eq!(signed_big_endian(&[]), None);
}

#[test]
fn a_row_group_with_values_but_no_bounds_leaves_its_column_unbounded() {
    let file = binary_file(&[row(0, 1, None)]).bytes;
    let reader = parquet::file::reader::SerializedFileReader::new(Bytes::from(file)).unwrap();
    let metadata = parquet::file::reader::FileReader::metadata(&reader);
    let offset = metadata.file_metadata().schema_descr().column(1);
    let chunk = |values| {
        parquet::file::metadata::ColumnChunkMetaData::builder(offset.clone())
            .set_num_values(values)
            .build()
            .unwrap()
    };
    let stats = |min: Option<i64>, max: Option<i64>, nulls| {
        Statistics::int64(min, max, None, Some(nulls), false)
    };
    let (three, two) = (chunk(3), chunk(2));
    let bounded = stats(Some(4), Some(9), 0);
    // The second row group's two values are null: the first bounds the column.
    let all_null = stats(None, None, 2);
    let pairs = [(&three, &&bounded), (&two, &&all_null)];
    assert_eq!(
        bounds_of(Kind::Int64, pairs.into_iter()),
        Some((Bound::Integer(4), Bound::Integer(9)))
    );
    // Its values are not null, yet it has no bounds: nothing bounds the column.
    let unknown = stats(None, None, 0);
    let pairs = [(&three, &&bounded), (&two, &&unknown)];
    assert_eq!(bounds_of(Kind::Int64, pairs.into_iter()), None);
}
