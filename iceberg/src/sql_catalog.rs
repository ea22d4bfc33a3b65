//! Iceberg's SQL catalog (the JDBC catalog's tables, as pyiceberg's `SqlCatalog` and Java's
//! `JdbcCatalog` create and read them): a row per table naming its current metadata file.
//! A commit is a compare-and-swap of that name, so of two writers racing, one loses and
//! plans again. Here on SQLite (one node's catalog, a file under its data directory); the
//! statements are written to run unchanged on PostgreSQL (the coordinator's database, where
//! the engine runs them).

use std::path::Path;

use rusqlite::{params, Connection, OptionalExtension};

use crate::catalog::{Catalog, Pointer, TableName, Version};
use crate::IcebergError;

/// The catalog's tables, created when missing, in the layout of Iceberg's JDBC catalog schema
/// V1 (`iceberg_type` says whether a row is a table or a view; rows without one, written by
/// V0 catalogs, are tables).
pub const CREATE_TABLES: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS iceberg_tables (
        catalog_name VARCHAR(255) NOT NULL,
        table_namespace VARCHAR(255) NOT NULL,
        table_name VARCHAR(255) NOT NULL,
        metadata_location VARCHAR(1000),
        previous_metadata_location VARCHAR(1000),
        iceberg_type VARCHAR(5),
        PRIMARY KEY (catalog_name, table_namespace, table_name))",
    "CREATE TABLE IF NOT EXISTS iceberg_namespace_properties (
        catalog_name VARCHAR(255) NOT NULL,
        namespace VARCHAR(255) NOT NULL,
        property_key VARCHAR(255) NOT NULL,
        property_value VARCHAR(1000) NOT NULL,
        PRIMARY KEY (catalog_name, namespace, property_key))",
];
/// Fails on a catalog made in the V0 layout, which lacks `iceberg_type`...
pub const HAS_TYPE_COLUMN: &str = "SELECT iceberg_type FROM iceberg_tables WHERE 1 = 0";
/// ... and this moves it to V1, as Iceberg's JDBC catalog does (its rows stay tables).
pub const ADD_TYPE_COLUMN: &str = "ALTER TABLE iceberg_tables ADD COLUMN iceberg_type VARCHAR(5)";

/// A V1 catalog's rows of tables (not views).
macro_rules! is_table {
    () => {
        "(iceberg_type = 'TABLE' OR iceberg_type IS NULL)"
    };
}
pub const LOAD: &str = concat!(
    "SELECT metadata_location FROM iceberg_tables
    WHERE catalog_name = $1 AND table_namespace = $2 AND table_name = $3 AND ",
    is_table!()
);
/// A namespace exists once it has a property (what pyiceberg writes for an empty one).
pub const CREATE_NAMESPACE: &str = "INSERT INTO iceberg_namespace_properties
    (catalog_name, namespace, property_key, property_value) VALUES ($1, $2, 'exists', 'true')
    ON CONFLICT DO NOTHING";
pub const CREATE_TABLE: &str = "INSERT INTO iceberg_tables
    (catalog_name, table_namespace, table_name, metadata_location, previous_metadata_location,
     iceberg_type)
    VALUES ($1, $2, $3, $4, NULL, 'TABLE') ON CONFLICT DO NOTHING";
pub const SWAP: &str = concat!(
    "UPDATE iceberg_tables
    SET metadata_location = $1, previous_metadata_location = $2
    WHERE catalog_name = $3 AND table_namespace = $4 AND table_name = $5
      AND metadata_location = $2 AND ",
    is_table!()
);

/// The SQL catalog in a SQLite file.
pub struct SqliteCatalog {
    connection: Connection,
    name: String,
}

fn failed(e: rusqlite::Error) -> IcebergError {
    IcebergError::Catalog(e.to_string())
}

impl SqliteCatalog {
    /// The catalog `name` in the file at `path` (made with its tables when missing).
    pub fn open(path: &Path, name: &str) -> Result<SqliteCatalog, IcebergError> {
        let connection = Connection::open(path)
            .map_err(|e| IcebergError::Catalog(format!("{}: {e}", path.display())))?;
        // Readers (pyiceberg, DuckDB) may hold the file: wait for them rather than fail.
        connection
            .busy_timeout(std::time::Duration::from_secs(10))
            .map_err(failed)?;
        for statement in CREATE_TABLES {
            connection.execute(statement, []).map_err(failed)?;
        }
        let has_type = |connection: &Connection| connection.prepare(HAS_TYPE_COLUMN).is_ok();
        if !has_type(&connection) {
            // Another writer may move it to V1 at the same time: its column counts too.
            if let Err(e) = connection.execute(ADD_TYPE_COLUMN, []) {
                if !has_type(&connection) {
                    return Err(failed(e));
                }
            }
        }
        Ok(SqliteCatalog {
            connection,
            name: name.to_string(),
        })
    }
}

impl Catalog for SqliteCatalog {
    fn load(&self, table: &TableName) -> Result<Option<Pointer>, IcebergError> {
        let location = self
            .connection
            .query_row(
                LOAD,
                params![self.name, table.namespace, table.table],
                |row| row.get::<_, Option<String>>(0),
            )
            .optional()
            .map(Option::flatten)
            .map_err(failed)?;
        Ok(location.map(|location| Pointer {
            location,
            metadata: None,
        }))
    }

    fn create(&self, table: &TableName, metadata_location: &str) -> Result<bool, IcebergError> {
        self.connection
            .execute(CREATE_NAMESPACE, params![self.name, table.namespace])
            .map_err(failed)?;
        let created = self
            .connection
            .execute(
                CREATE_TABLE,
                params![self.name, table.namespace, table.table, metadata_location],
            )
            .map_err(failed)?;
        Ok(created == 1)
    }

    fn commit(
        &self,
        table: &TableName,
        from: Version<'_>,
        next: Version<'_>,
    ) -> Result<bool, IcebergError> {
        let swapped = self
            .connection
            .execute(
                SWAP,
                params![
                    next.location,
                    from.location,
                    self.name,
                    table.namespace,
                    table.table
                ],
            )
            .map_err(failed)?;
        Ok(swapped == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_is_created_once_and_swapped_only_from_where_it_points() {
        let dir = std::env::temp_dir().join(format!("catalog-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("catalog.db");
        let catalog = SqliteCatalog::open(&path, "shoal").unwrap();
        let orders = TableName {
            namespace: "kafka".into(),
            table: "orders".into(),
        };
        let at = |catalog: &SqliteCatalog| catalog.load(&orders).unwrap().map(|p| p.location);
        let metadata = serde_json::json!({});
        let version = |location| Version {
            location,
            metadata: &metadata,
        };
        assert_eq!(at(&catalog), None);
        assert!(catalog.create(&orders, "v0.json").unwrap());
        assert!(!catalog.create(&orders, "other.json").unwrap());
        assert_eq!(at(&catalog).as_deref(), Some("v0.json"));
        let commit = |from, next| catalog.commit(&orders, version(from), version(next));
        assert!(commit("v0.json", "v1.json").unwrap());
        // A writer that planned from v0 lost the race.
        assert!(!commit("v0.json", "v1-other.json").unwrap());
        let again = SqliteCatalog::open(&path, "shoal").unwrap();
        assert_eq!(at(&again).as_deref(), Some("v1.json"));
        let other_catalog = SqliteCatalog::open(&path, "another").unwrap();
        assert_eq!(at(&other_catalog), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_catalog_of_the_v0_layout_moves_to_v1_and_keeps_its_tables() {
        let dir = std::env::temp_dir().join(format!("catalog-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("catalog.db");
        let v0 = Connection::open(&path).unwrap();
        v0.execute_batch(
            "CREATE TABLE iceberg_tables (catalog_name VARCHAR(255) NOT NULL,
                table_namespace VARCHAR(255) NOT NULL, table_name VARCHAR(255) NOT NULL,
                metadata_location VARCHAR(1000), previous_metadata_location VARCHAR(1000),
                PRIMARY KEY (catalog_name, table_namespace, table_name));
             INSERT INTO iceberg_tables VALUES ('shoal', 'kafka', 'old', 'old.json', NULL);",
        )
        .unwrap();
        assert!(v0.prepare(HAS_TYPE_COLUMN).is_err());
        let catalog = SqliteCatalog::open(&path, "shoal").unwrap();
        let name = |table: &str| TableName {
            namespace: "kafka".into(),
            table: table.into(),
        };
        let at = |table| catalog.load(&name(table)).unwrap().map(|p| p.location);
        assert_eq!(
            at("old").as_deref(),
            Some("old.json"),
            "a V0 row is a table"
        );
        assert!(catalog.create(&name("new"), "new.json").unwrap());
        let types: Vec<(String, Option<String>)> = (v0
            .prepare("SELECT table_name, iceberg_type FROM iceberg_tables ORDER BY table_name"))
        .unwrap()
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
        assert_eq!(
            types,
            [("new".into(), Some("TABLE".into())), ("old".into(), None)]
        );
        // A view of the same name is not a table, and is not swapped as one.
        v0.execute(
            "INSERT INTO iceberg_tables VALUES ('shoal', 'kafka', 'v', 'v.json', NULL, 'VIEW')",
            [],
        )
        .unwrap();
        assert_eq!(at("v"), None);
        // Opened again, it is V1 already.
        SqliteCatalog::open(&path, "shoal").unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
