//! Small data files merged into one: a table committed every interval gains a file (and a
//! manifest) each time, and readers open every one. Files written with the same schema are
//! merged by copying their row groups' encoded column chunks, without decoding a value.

use bytes::Bytes;
use parquet::column::writer::ColumnCloseResult;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::writer::SerializedFileWriter;

use crate::column_metrics::ColumnMetrics;
use crate::data_file::{self, WrittenFile};
use crate::IcebergError;

/// A Parquet file's schema, to tell which files may be merged.
pub fn schema_of(file: &Bytes) -> Result<parquet::schema::types::Type, IcebergError> {
    let reader = SerializedFileReader::new(file.clone())?;
    Ok(reader.metadata().file_metadata().schema().clone())
}

/// One file holding every row group of `files` (which share one schema); its metrics are
/// those of the row groups' column chunks, whose statistics come along with them.
pub fn merge_files(files: &[Bytes]) -> Result<WrittenFile, IcebergError> {
    let readers = (files.iter())
        .map(|file| SerializedFileReader::new(file.clone()))
        .collect::<Result<Vec<_>, _>>()?;
    let Some(first) = readers.first() else {
        return Err(IcebergError::Metadata("no files to merge".into()));
    };
    let schema = first
        .metadata()
        .file_metadata()
        .schema_descr()
        .root_schema_ptr();
    let mut out = Vec::new();
    let mut writer = SerializedFileWriter::new(&mut out, schema.clone(), data_file::properties())?;
    for (reader, bytes) in readers.iter().zip(files) {
        if *reader.metadata().file_metadata().schema() != *schema {
            return Err(IcebergError::Metadata(
                "files of different schemas are not merged".into(),
            ));
        }
        for group in reader.metadata().row_groups() {
            let mut merged = writer.next_row_group()?;
            for column in group.columns() {
                let close = ColumnCloseResult {
                    bytes_written: column.compressed_size() as u64,
                    rows_written: group.num_rows() as u64,
                    metadata: column.clone(),
                    bloom_filter: None,
                    column_index: None,
                    offset_index: None,
                };
                merged.append_column(bytes, close)?;
            }
            merged.close()?;
        }
    }
    let metadata = writer.close()?;
    Ok(WrittenFile {
        bytes: out,
        record_count: metadata.file_metadata().num_rows(),
        metrics: ColumnMetrics::of_parquet(&metadata),
    })
}

#[cfg(test)]
mod tests {
    use parquet::file::reader::FileReader;

    use super::*;
    use crate::table_schema::{TableSchema, ValueColumns};
    use crate::Row;

    fn file(offsets: std::ops::Range<i64>) -> Bytes {
        let rows: Vec<Row> = offsets
            .map(|offset| Row {
                partition: 0,
                offset,
                timestamp_ms: offset,
                key: None,
                value: Some(Bytes::from(format!("v{offset}"))),
                headers: vec![(format!("h{offset}"), None)],
            })
            .collect();
        let schema = TableSchema::new(ValueColumns::Binary);
        Bytes::from(data_file::write(&rows, &schema, None).unwrap().bytes)
    }

    #[test]
    fn merged_files_read_back_every_row_in_order() {
        let files = [file(0..3), file(3..4), file(4..10)];
        let merged = merge_files(&files).unwrap();
        assert_eq!(merged.record_count, 10);
        let reader = SerializedFileReader::new(Bytes::from(merged.bytes)).unwrap();
        assert_eq!(reader.metadata().num_row_groups(), 3);
        let read: Vec<String> = (reader.get_row_iter(None).unwrap())
            .map(|r| r.unwrap().to_string())
            .collect();
        for (offset, row) in read.iter().enumerate() {
            assert!(row.contains(&format!("offset: {offset},")), "{row}");
            assert!(row.contains(&format!("key: \"h{offset}\"")), "{row}");
        }
        assert_eq!(schema_of(&files[0]).unwrap(), schema_of(&files[2]).unwrap());
    }
}
