use thiserror::Error;

/// Every failure this crate reports.
#[derive(Debug, Error)]
pub enum IcebergError {
    /// Writing a Parquet data file failed.
    #[error("parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    /// Writing an Avro manifest failed.
    #[error("avro: {0}")]
    Avro(String),
    /// The catalog's database refused or failed a statement.
    #[error("catalog: {0}")]
    Catalog(String),
    /// A table's metadata that does not parse or does not hold what a commit needs; the
    /// message names the file.
    #[error("table metadata: {0}")]
    Metadata(String),
}

impl From<apache_avro::Error> for IcebergError {
    fn from(e: apache_avro::Error) -> Self {
        IcebergError::Avro(e.to_string())
    }
}
