//! Topics as Apache Iceberg tables (format version 2), written without a JVM: the rows a
//! topic's records become, Parquet data files holding them, the Avro manifests and manifest
//! lists that name those files, and the table metadata a catalog points at; and the SQL
//! catalog that points at it. Apart from the catalog, I/O-free: the table writer stores the
//! bytes in the object store, then swaps the catalog's pointer.
//!
//! Exactly once: each snapshot's summary carries, per partition, the next offset the table
//! will take (`shoal.next-offsets`), written in the same commit as the data files, so a
//! writer resumes from the table itself.

pub mod append;
pub mod avro_columns;
pub mod avro_unions;
pub mod catalog;
pub mod column_metrics;
pub mod columns;
pub mod compact;
pub mod data_file;
pub mod error;
pub mod evolve;
pub mod json_columns;
pub mod manifest;
pub mod metadata;
pub mod protobuf_columns;
pub mod rest_commit;
pub mod row;
pub mod shred;
pub mod spare_buffers;
pub mod sql_catalog;
pub mod table_schema;

pub use error::IcebergError;
pub use row::Row;
