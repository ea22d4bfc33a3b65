//! What the table writer asks of a catalog, whichever it is: where a table's metadata is, a
//! new table, and a commit that lands only if the table is still as the commit found it. A
//! SQL catalog swaps the name of a metadata file the writer stored; a REST catalog takes the
//! commit's changes and writes the metadata itself.

use serde_json::Value;

use crate::IcebergError;

/// A table's name in the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TableName {
    pub namespace: String,
    pub table: String,
}

/// Where a catalog says a table's metadata is, and the metadata itself when the catalog's
/// answer carries it (a REST catalog's does; a SQL catalog's names a file to read).
#[derive(Debug, Clone, PartialEq)]
pub struct Pointer {
    pub location: String,
    pub metadata: Option<Value>,
}

/// A version of a table's metadata and where it is (or, for a catalog that writes the
/// metadata itself, where the writer would have put it).
#[derive(Debug, Clone, Copy)]
pub struct Version<'a> {
    pub location: &'a str,
    pub metadata: &'a Value,
}

pub trait Catalog {
    /// Where the table's current metadata is, or None when the catalog has no such table.
    fn load(&self, table: &TableName) -> Result<Option<Pointer>, IcebergError>;
    /// Registers a new table whose metadata is stored at `metadata_location` (its namespace
    /// too): false when another writer registered it first.
    fn create(&self, table: &TableName, metadata_location: &str) -> Result<bool, IcebergError>;
    /// Makes `next` the table's metadata if the table is still at `from`: false when another
    /// writer committed meanwhile (the writer plans again from what the catalog then names).
    fn commit(
        &self,
        table: &TableName,
        from: Version<'_>,
        next: Version<'_>,
    ) -> Result<bool, IcebergError>;
    /// Whether the catalog writes a commit's metadata file itself (the writer then stores only
    /// the data files, manifests and manifest lists, and leaves old metadata files to it).
    fn writes_metadata(&self) -> bool {
        false
    }
}
