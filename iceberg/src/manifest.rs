//! Avro manifests (the data files one commit added) and manifest lists (every manifest of a
//! snapshot), with the Iceberg v2 schemas' field ids, by which readers resolve them: the
//! fields a v2 reader requires, and each data file's column metrics (`column_metrics`), by
//! which readers skip files.

use apache_avro::schema::UnionSchema;
use apache_avro::types::Value;
use apache_avro::{Codec, DeflateSettings, Schema, Writer};

use crate::column_metrics::ColumnMetrics;
use crate::table_schema::TableSchema;
use crate::IcebergError;

/// A manifest entry's status: the file was added by the entry's snapshot; or it was deleted.
const STATUS_ADDED: i32 = 1;
const STATUS_DELETED: i32 = 2;
/// A data file's and a manifest's content: data (not deletes).
const CONTENT_DATA: i32 = 0;
/// Deflate, which every Iceberg reader takes; the file then names its codec (pyiceberg takes
/// a file that names none for gzip, which it does not read).
fn codec() -> Codec {
    Codec::Deflate(DeflateSettings::default())
}
/// The only partition spec: unpartitioned.
pub const PARTITION_SPEC_ID: i32 = 0;

const MANIFEST_ENTRY_SCHEMA: &str = r#"{
  "type": "record", "name": "manifest_entry", "fields": [
    {"name": "status", "type": "int", "field-id": 0},
    {"name": "snapshot_id", "type": ["null", "long"], "default": null, "field-id": 1},
    {"name": "sequence_number", "type": ["null", "long"], "default": null, "field-id": 3},
    {"name": "file_sequence_number", "type": ["null", "long"], "default": null, "field-id": 4},
    {"name": "data_file", "field-id": 2, "type": {
      "type": "record", "name": "r2", "fields": [
        {"name": "content", "type": "int", "field-id": 134},
        {"name": "file_path", "type": "string", "field-id": 100},
        {"name": "file_format", "type": "string", "field-id": 101},
        {"name": "partition", "field-id": 102,
         "type": {"type": "record", "name": "r102", "fields": []}},
        {"name": "record_count", "type": "long", "field-id": 103},
        {"name": "file_size_in_bytes", "type": "long", "field-id": 104},
        {"name": "value_counts", "default": null, "field-id": 109, "type": ["null",
          {"type": "array", "logicalType": "map", "items": {"type": "record", "name": "k119_v120",
            "fields": [{"name": "key", "type": "int", "field-id": 119},
                       {"name": "value", "type": "long", "field-id": 120}]}}]},
        {"name": "null_value_counts", "default": null, "field-id": 110, "type": ["null",
          {"type": "array", "logicalType": "map", "items": {"type": "record", "name": "k121_v122",
            "fields": [{"name": "key", "type": "int", "field-id": 121},
                       {"name": "value", "type": "long", "field-id": 122}]}}]},
        {"name": "nan_value_counts", "default": null, "field-id": 137, "type": ["null",
          {"type": "array", "logicalType": "map", "items": {"type": "record", "name": "k138_v139",
            "fields": [{"name": "key", "type": "int", "field-id": 138},
                       {"name": "value", "type": "long", "field-id": 139}]}}]},
        {"name": "lower_bounds", "default": null, "field-id": 125, "type": ["null",
          {"type": "array", "logicalType": "map", "items": {"type": "record", "name": "k126_v127",
            "fields": [{"name": "key", "type": "int", "field-id": 126},
                       {"name": "value", "type": "bytes", "field-id": 127}]}}]},
        {"name": "upper_bounds", "default": null, "field-id": 128, "type": ["null",
          {"type": "array", "logicalType": "map", "items": {"type": "record", "name": "k129_v130",
            "fields": [{"name": "key", "type": "int", "field-id": 129},
                       {"name": "value", "type": "bytes", "field-id": 130}]}}]}
      ]
    }}
  ]
}"#;

const MANIFEST_FILE_SCHEMA: &str = r#"{
  "type": "record", "name": "manifest_file", "fields": [
    {"name": "manifest_path", "type": "string", "field-id": 500},
    {"name": "manifest_length", "type": "long", "field-id": 501},
    {"name": "partition_spec_id", "type": "int", "field-id": 502},
    {"name": "content", "type": "int", "field-id": 517},
    {"name": "sequence_number", "type": "long", "field-id": 515},
    {"name": "min_sequence_number", "type": "long", "field-id": 516},
    {"name": "added_snapshot_id", "type": "long", "field-id": 503},
    {"name": "added_files_count", "type": "int", "field-id": 504},
    {"name": "existing_files_count", "type": "int", "field-id": 505},
    {"name": "deleted_files_count", "type": "int", "field-id": 506},
    {"name": "added_rows_count", "type": "long", "field-id": 512},
    {"name": "existing_rows_count", "type": "long", "field-id": 513},
    {"name": "deleted_rows_count", "type": "long", "field-id": 514}
  ]
}"#;

/// A data file a commit adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataFile {
    pub path: String,
    pub record_count: i64,
    pub size_bytes: i64,
    /// Its columns' counts and bounds (empty when a manifest did not give them).
    pub metrics: ColumnMetrics,
}

/// A manifest as a manifest list names it (the counts Iceberg requires; a list written by
/// another writer is read into this, so its optional partition summaries are not carried).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestFile {
    pub path: String,
    pub length: i64,
    pub content: i32,
    /// The sequence number of the snapshot that added it, and the lowest of its files'.
    pub sequence_number: i64,
    pub min_sequence_number: i64,
    pub added_snapshot_id: i64,
    pub added_files_count: i32,
    pub existing_files_count: i32,
    pub deleted_files_count: i32,
    pub added_rows_count: i64,
    pub existing_rows_count: i64,
    pub deleted_rows_count: i64,
}

impl ManifestFile {
    /// The entry for a manifest a snapshot adds with `files`.
    pub fn added(
        path: String,
        length: i64,
        snapshot_id: i64,
        sequence_number: i64,
        files: &[DataFile],
    ) -> ManifestFile {
        ManifestFile {
            path,
            length,
            content: CONTENT_DATA,
            sequence_number,
            min_sequence_number: sequence_number,
            added_snapshot_id: snapshot_id,
            added_files_count: files.len() as i32,
            existing_files_count: 0,
            deleted_files_count: 0,
            added_rows_count: files.iter().map(|f| f.record_count).sum(),
            existing_rows_count: 0,
            deleted_rows_count: 0,
        }
    }
}

/// A record's field by name, outside its union.
fn field<'a>(fields: &'a [(String, Value)], name: &str) -> Option<&'a Value> {
    match fields.iter().find(|(n, _)| n == name).map(|(_, v)| v) {
        Some(Value::Union(_, inner)) => Some(inner.as_ref()),
        other => other,
    }
}

/// A long (or int) field; 0 when null or missing.
fn long_field(fields: &[(String, Value)], name: &str) -> Result<i64, IcebergError> {
    match field(fields, name) {
        Some(Value::Long(v)) => Ok(*v),
        Some(Value::Int(v)) => Ok(i64::from(*v)),
        Some(Value::Null) | None => Ok(0),
        Some(other) => Err(IcebergError::Avro(format!("{name} is {other:?}"))),
    }
}

fn string_field(fields: &[(String, Value)], name: &str) -> Result<String, IcebergError> {
    match field(fields, name) {
        Some(Value::String(text)) => Ok(text.clone()),
        _ => Err(IcebergError::Avro(format!("an entry without its {name}"))),
    }
}

fn records(bytes: &[u8], what: &str) -> Result<Vec<Vec<(String, Value)>>, IcebergError> {
    let mut out = Vec::new();
    for value in apache_avro::Reader::new(bytes)? {
        let Value::Record(fields) = value? else {
            return Err(IcebergError::Avro(format!(
                "a {what} entry is not a record"
            )));
        };
        out.push(fields);
    }
    Ok(out)
}

/// The live data files a manifest names (any writer's manifest; deleted entries left out).
pub fn read_manifest(manifest: &[u8]) -> Result<Vec<DataFile>, IcebergError> {
    let mut files = Vec::new();
    for entry in records(manifest, "manifest")? {
        if long_field(&entry, "status")? == i64::from(STATUS_DELETED) {
            continue;
        }
        let Some(Value::Record(data_file)) = field(&entry, "data_file") else {
            return Err(IcebergError::Avro(
                "a manifest entry without its data file".into(),
            ));
        };
        files.push(DataFile {
            path: string_field(data_file, "file_path")?,
            record_count: long_field(data_file, "record_count")?,
            size_bytes: long_field(data_file, "file_size_in_bytes")?,
            metrics: ColumnMetrics {
                value_counts: long_map(data_file, "value_counts"),
                null_value_counts: long_map(data_file, "null_value_counts"),
                nan_value_counts: long_map(data_file, "nan_value_counts"),
                lower_bounds: bytes_map(data_file, "lower_bounds"),
                upper_bounds: bytes_map(data_file, "upper_bounds"),
            },
        });
    }
    Ok(files)
}

/// The manifests a manifest list names, by field name (any writer's list).
pub fn read_manifest_list(list: &[u8]) -> Result<Vec<ManifestFile>, IcebergError> {
    let mut manifests = Vec::new();
    for fields in records(list, "manifest list")? {
        let long = |name: &str| long_field(&fields, name);
        let path = string_field(&fields, "manifest_path")?;
        let count = |name: &str| long(name).map(|v| v as i32);
        manifests.push(ManifestFile {
            path,
            length: long("manifest_length")?,
            content: count("content")?,
            sequence_number: long("sequence_number")?,
            min_sequence_number: long("min_sequence_number")?,
            added_snapshot_id: long("added_snapshot_id")?,
            added_files_count: count("added_files_count")?,
            existing_files_count: count("existing_files_count")?,
            deleted_files_count: count("deleted_files_count")?,
            added_rows_count: long("added_rows_count")?,
            existing_rows_count: long("existing_rows_count")?,
            deleted_rows_count: long("deleted_rows_count")?,
        });
    }
    Ok(manifests)
}

/// The manifest of `files` written with `table`, all added by `snapshot_id` (their sequence
/// number is inherited from the manifest list's entry).
pub fn write_manifest(
    snapshot_id: i64,
    files: &[DataFile],
    table: &TableSchema,
) -> Result<Vec<u8>, IcebergError> {
    let schema = manifest_entry_schema()?;
    let mut writer = Writer::with_codec(&schema, Vec::new(), codec())?;
    let metadata = [
        ("schema", table.to_json().to_string()),
        ("schema-id", table.schema_id.to_string()),
        ("partition-spec", "[]".to_string()),
        ("partition-spec-id", PARTITION_SPEC_ID.to_string()),
        ("format-version", "2".to_string()),
        ("content", "data".to_string()),
    ];
    for (key, value) in metadata {
        writer.add_user_metadata(key.to_string(), value)?;
    }
    for file in files {
        let data_file = Value::Record(
            vec![
                ("content".into(), Value::Int(CONTENT_DATA)),
                ("file_path".into(), Value::String(file.path.clone())),
                ("file_format".into(), Value::String("PARQUET".into())),
                ("partition".into(), Value::Record(Vec::new())),
                ("record_count".into(), Value::Long(file.record_count)),
                ("file_size_in_bytes".into(), Value::Long(file.size_bytes)),
            ]
            .into_iter()
            .chain(statistics(file))
            .collect(),
        );
        writer.append_value(Value::Record(vec![
            ("status".into(), Value::Int(STATUS_ADDED)),
            (
                "snapshot_id".into(),
                Value::Union(1, Box::new(Value::Long(snapshot_id))),
            ),
            (
                "sequence_number".into(),
                Value::Union(0, Box::new(Value::Null)),
            ),
            (
                "file_sequence_number".into(),
                Value::Union(0, Box::new(Value::Null)),
            ),
            ("data_file".into(), data_file),
        ]))?;
    }
    Ok(writer.into_inner()?)
}

/// The manifest entry's schema with `logicalType: map` put back on the arrays that stand for
/// Iceberg's maps: the Avro parser keeps no logical type it does not know, and readers need it
/// to read those arrays as maps.
fn manifest_entry_schema() -> Result<Schema, IcebergError> {
    let mut schema = Schema::parse_str(MANIFEST_ENTRY_SCHEMA)?;
    let Schema::Record(entry) = &mut schema else {
        return Ok(schema);
    };
    for field in &mut entry.fields {
        let Schema::Record(data_file) = &mut field.schema else {
            continue;
        };
        for statistic in &mut data_file.fields {
            let Schema::Union(union) = &statistic.schema else {
                continue;
            };
            if let [Schema::Null, Schema::Array(array)] = union.variants() {
                let mut array = array.clone();
                (array.attributes).insert("logicalType".into(), serde_json::json!("map"));
                statistic.schema =
                    Schema::Union(UnionSchema::new(vec![Schema::Null, Schema::Array(array)])?);
            }
        }
    }
    Ok(schema)
}

/// A data file's column metrics as a manifest entry's fields; a map with nothing known is
/// null.
fn statistics(file: &DataFile) -> Vec<(String, Value)> {
    fn map(entries: impl Iterator<Item = (i32, Value)>) -> Value {
        let items: Vec<Value> = entries
            .map(|(key, value)| {
                Value::Record(vec![
                    ("key".into(), Value::Int(key)),
                    ("value".into(), value),
                ])
            })
            .collect();
        match items.is_empty() {
            true => Value::Union(0, Box::new(Value::Null)),
            false => Value::Union(1, Box::new(Value::Array(items))),
        }
    }
    let metrics = &file.metrics;
    let counts = |map_of: &std::collections::BTreeMap<i32, i64>| {
        map(map_of.iter().map(|(id, n)| (*id, Value::Long(*n))))
    };
    let bounds = |map_of: &std::collections::BTreeMap<i32, Vec<u8>>| {
        map(map_of.iter().map(|(id, b)| (*id, Value::Bytes(b.clone()))))
    };
    vec![
        ("value_counts".into(), counts(&metrics.value_counts)),
        (
            "null_value_counts".into(),
            counts(&metrics.null_value_counts),
        ),
        ("nan_value_counts".into(), counts(&metrics.nan_value_counts)),
        ("lower_bounds".into(), bounds(&metrics.lower_bounds)),
        ("upper_bounds".into(), bounds(&metrics.upper_bounds)),
    ]
}

/// A manifest's map of field id to `T` (`value_counts`, `lower_bounds`); empty when null. An
/// entry of another type is left out.
fn id_map<T>(
    fields: &[(String, Value)],
    name: &str,
    value_of: impl Fn(&Value) -> Option<T>,
) -> std::collections::BTreeMap<i32, T> {
    let Some(Value::Array(entries)) = field(fields, name) else {
        return Default::default();
    };
    (entries.iter())
        .filter_map(|entry| match entry {
            Value::Record(pair) => match (field(pair, "key"), field(pair, "value")) {
                (Some(Value::Int(key)), Some(value)) => Some((*key, value_of(value)?)),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

fn long_map(fields: &[(String, Value)], name: &str) -> std::collections::BTreeMap<i32, i64> {
    id_map(fields, name, |value| match value {
        Value::Long(n) => Some(*n),
        _ => None,
    })
}

fn bytes_map(fields: &[(String, Value)], name: &str) -> std::collections::BTreeMap<i32, Vec<u8>> {
    id_map(fields, name, |value| match value {
        Value::Bytes(bytes) => Some(bytes.clone()),
        _ => None,
    })
}

/// The manifest list of a snapshot: every manifest it holds.
pub fn write_manifest_list(
    snapshot_id: i64,
    parent_snapshot_id: Option<i64>,
    sequence_number: i64,
    manifests: &[ManifestFile],
) -> Result<Vec<u8>, IcebergError> {
    let schema = Schema::parse_str(MANIFEST_FILE_SCHEMA)?;
    let mut writer = Writer::with_codec(&schema, Vec::new(), codec())?;
    let parent = parent_snapshot_id.map_or("null".to_string(), |id| id.to_string());
    let metadata = [
        ("snapshot-id", snapshot_id.to_string()),
        ("parent-snapshot-id", parent),
        ("sequence-number", sequence_number.to_string()),
        ("format-version", "2".to_string()),
    ];
    for (key, value) in metadata {
        writer.add_user_metadata(key.to_string(), value)?;
    }
    for manifest in manifests {
        writer.append_value(Value::Record(vec![
            ("manifest_path".into(), Value::String(manifest.path.clone())),
            ("manifest_length".into(), Value::Long(manifest.length)),
            ("partition_spec_id".into(), Value::Int(PARTITION_SPEC_ID)),
            ("content".into(), Value::Int(manifest.content)),
            (
                "sequence_number".into(),
                Value::Long(manifest.sequence_number),
            ),
            (
                "min_sequence_number".into(),
                Value::Long(manifest.min_sequence_number),
            ),
            (
                "added_snapshot_id".into(),
                Value::Long(manifest.added_snapshot_id),
            ),
            (
                "added_files_count".into(),
                Value::Int(manifest.added_files_count),
            ),
            (
                "existing_files_count".into(),
                Value::Int(manifest.existing_files_count),
            ),
            (
                "deleted_files_count".into(),
                Value::Int(manifest.deleted_files_count),
            ),
            (
                "added_rows_count".into(),
                Value::Long(manifest.added_rows_count),
            ),
            (
                "existing_rows_count".into(),
                Value::Long(manifest.existing_rows_count),
            ),
            (
                "deleted_rows_count".into(),
                Value::Long(manifest.deleted_rows_count),
            ),
        ]))?;
    }
    Ok(writer.into_inner()?)
}

#[cfg(test)]
mod tests {
    use apache_avro::Reader;

    use super::*;

    #[test]
    fn manifests_read_back_with_their_field_ids() {
        let files = [
            DataFile {
                path: "file:///w/t/data/a.parquet".into(),
                record_count: 10,
                size_bytes: 1234,
                metrics: ColumnMetrics {
                    value_counts: [(2, 10), (3, 10), (7, 12)].into(),
                    null_value_counts: [(2, 0), (3, 0), (7, 4)].into(),
                    nan_value_counts: [(7, 1)].into(),
                    lower_bounds: [(2, 0i32.to_le_bytes().to_vec()), (3, vec![5, 0, 0, 0])].into(),
                    upper_bounds: [(2, 2i32.to_le_bytes().to_vec())].into(),
                },
            },
            DataFile {
                path: "file:///w/t/data/b.parquet".into(),
                record_count: 1,
                size_bytes: 12,
                metrics: ColumnMetrics::default(),
            },
        ];
        let table = TableSchema::new(crate::table_schema::ValueColumns::Binary);
        let manifest = write_manifest(77, &files, &table).unwrap();
        let reader = Reader::new(manifest.as_slice()).unwrap();
        let schema_text = serde_json::to_string(reader.writer_schema()).unwrap();
        assert!(schema_text.contains(r#""field-id":102"#), "{schema_text}");
        // The header's schema as written (a parser drops the logical type again).
        let header = String::from_utf8_lossy(&manifest);
        assert_eq!(header.matches(r#""logicalType":"map""#).count(), 5);
        assert_eq!(reader.user_metadata()["format-version"], b"2");
        let entries: Vec<Value> = reader.map(Result::unwrap).collect();
        assert_eq!(entries.len(), 2);
        let Value::Record(fields) = &entries[0] else {
            panic!("{:?}", entries[0])
        };
        assert_eq!(fields[0], ("status".into(), Value::Int(STATUS_ADDED)));
        assert_eq!(read_manifest(&manifest).unwrap(), files);

        let path = "file:///w/t/metadata/m.avro".to_string();
        let listed = ManifestFile::added(path, manifest.len() as i64, 77, 3, &files);
        let list = write_manifest_list(77, Some(76), 3, std::slice::from_ref(&listed)).unwrap();
        let reader = Reader::new(list.as_slice()).unwrap();
        assert_eq!(reader.user_metadata()["parent-snapshot-id"], b"76");
        assert_eq!(read_manifest_list(&list).unwrap(), [listed]);
    }
}
