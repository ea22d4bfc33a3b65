//! Versioned schema migrations: each applied once, in order, in its own transaction, under a
//! session advisory lock so brokers starting together do not race. A migration's text is
//! checksummed when applied; a database whose recorded checksum differs, or that holds a
//! version this binary does not know (a newer Shoal ran), is refused rather than guessed at.

use crate::{Connection, Param, PgError};

/// `pg_advisory_lock` key for migrations ("shoalmig" in ASCII).
const MIGRATION_LOCK: i64 = 0x73686f616c6d6967;

#[derive(Clone, Copy, Debug)]
pub struct Migration {
    pub version: i32,
    pub name: &'static str,
    pub sql: &'static str,
}

impl Migration {
    fn checksum(&self) -> i64 {
        crc32c::crc32c(self.sql.as_bytes()) as i64
    }
}

/// Applies every migration the database lacks; returns the versions applied now.
pub async fn apply(
    connection: &mut Connection,
    migrations: &[Migration],
) -> Result<Vec<i32>, PgError> {
    check_order(migrations)?;
    connection
        .query("SELECT pg_advisory_lock($1)", &[Param::I64(MIGRATION_LOCK)])
        .await?;
    let outcome = apply_locked(connection, migrations).await;
    if !connection.is_broken() {
        // Rolls back a migration's transaction left open by a failure, then unlocks.
        if connection.transaction_status() != b'I' {
            let _ = connection.batch_execute("ROLLBACK").await;
        }
        connection
            .query(
                "SELECT pg_advisory_unlock($1)",
                &[Param::I64(MIGRATION_LOCK)],
            )
            .await?;
    }
    outcome
}

fn check_order(migrations: &[Migration]) -> Result<(), PgError> {
    for pair in migrations.windows(2) {
        if pair[1].version <= pair[0].version {
            return Err(PgError::Migration(format!(
                "versions must increase: {} follows {}",
                pair[1].version, pair[0].version
            )));
        }
    }
    Ok(())
}

async fn apply_locked(
    connection: &mut Connection,
    migrations: &[Migration],
) -> Result<Vec<i32>, PgError> {
    connection
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS shoal_schema_migrations (\
               version integer PRIMARY KEY, name text NOT NULL, checksum bigint NOT NULL, \
               applied_at timestamptz NOT NULL DEFAULT now())",
        )
        .await?;
    let rows = connection
        .query(
            "SELECT version, checksum FROM shoal_schema_migrations ORDER BY version",
            &[],
        )
        .await?;
    let mut recorded = Vec::with_capacity(rows.len());
    for row in &rows {
        recorded.push((row.i64(0)? as i32, row.i64(1)?));
    }
    for (version, checksum) in &recorded {
        match migrations.iter().find(|m| m.version == *version) {
            None => {
                return Err(PgError::Migration(format!(
                    "the database has schema version {version}, which this Shoal does not know \
                     (a newer Shoal migrated it)"
                )))
            }
            Some(m) if m.checksum() != *checksum => {
                return Err(PgError::Migration(format!(
                    "migration {version} ({}) differs from the one applied to the database",
                    m.name
                )))
            }
            Some(_) => {}
        }
    }
    let mut applied = Vec::new();
    for migration in migrations {
        if recorded.iter().any(|(v, _)| *v == migration.version) {
            continue;
        }
        connection.batch_execute("BEGIN").await?;
        connection.batch_execute(migration.sql).await?;
        connection
            .execute(
                "INSERT INTO shoal_schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                &[
                    Param::I32(migration.version),
                    Param::Text(migration.name),
                    Param::I64(migration.checksum()),
                ],
            )
            .await?;
        connection.batch_execute("COMMIT").await?;
        tracing::info!(
            version = migration.version,
            name = migration.name,
            "schema migration applied"
        );
        applied.push(migration.version);
    }
    Ok(applied)
}
