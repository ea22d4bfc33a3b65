//! The SQL catalog in the coordinator's PostgreSQL database, where a cluster's brokers (and
//! pyiceberg's `SqlCatalog` or Java's `JdbcCatalog`) all find it. The table writer's code is
//! blocking and the PostgreSQL client runs on glommio, so the catalog's connection lives on a
//! thread of its own with a small executor, and the writer's calls wait for its answers.

use std::sync::mpsc::{self, Receiver, Sender};
use std::time::Duration;

use shoal_iceberg::catalog::{Catalog, Pointer, TableName, Version};
use shoal_iceberg::sql_catalog::{
    ADD_TYPE_COLUMN, CREATE_NAMESPACE, CREATE_TABLE, CREATE_TABLES, HAS_TYPE_COLUMN, LOAD, SWAP,
};
use shoal_iceberg::IcebergError;
use shoal_pg::{Connection, Param, PgConfig, PgError};

/// A call to the catalog, with where its answer goes.
enum Call {
    Load(TableName, Sender<Result<Option<String>, String>>),
    Create(TableName, String, Sender<Result<bool, String>>),
    Swap(TableName, String, String, Sender<Result<bool, String>>),
}

pub struct PgCatalog {
    calls: Sender<Call>,
}

/// The longest a call waits for its answer (the connection's own deadlines are shorter).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

impl PgCatalog {
    /// The catalog `name` in `database`; its connection is made on the first call.
    pub fn start(database: PgConfig, name: String) -> Result<PgCatalog, String> {
        let (calls, received) = mpsc::channel();
        glommio::LocalExecutorBuilder::default()
            .name("iceberg-catalog")
            .io_memory(0)
            .spawn(move || async move { serve(database, name, received).await })
            .map_err(|e| format!("cannot start the catalog's thread: {e}"))?;
        Ok(PgCatalog { calls })
    }

    fn ask<T>(
        &self,
        call: impl FnOnce(Sender<Result<T, String>>) -> Call,
    ) -> Result<T, IcebergError> {
        let (answer, answered) = mpsc::channel();
        self.calls
            .send(call(answer))
            .map_err(|_| IcebergError::Catalog("the catalog's thread is gone".into()))?;
        answered
            .recv_timeout(ANSWER_TIMEOUT)
            .map_err(|_| IcebergError::Catalog("the catalog did not answer".into()))?
            .map_err(IcebergError::Catalog)
    }
}

impl Catalog for PgCatalog {
    fn load(&self, table: &TableName) -> Result<Option<Pointer>, IcebergError> {
        let location = self.ask(|answer| Call::Load(table.clone(), answer))?;
        Ok(location.map(|location| Pointer {
            location,
            metadata: None,
        }))
    }

    fn create(&self, table: &TableName, metadata_location: &str) -> Result<bool, IcebergError> {
        self.ask(|answer| Call::Create(table.clone(), metadata_location.to_string(), answer))
    }

    fn commit(
        &self,
        table: &TableName,
        from: Version<'_>,
        next: Version<'_>,
    ) -> Result<bool, IcebergError> {
        let (expected, next) = (from.location.to_string(), next.location.to_string());
        self.ask(|answer| Call::Swap(table.clone(), expected, next, answer))
    }
}

/// Answers calls one at a time; waiting for the next one blocks this thread, which has
/// nothing else to run.
async fn serve(database: PgConfig, name: String, calls: Receiver<Call>) {
    let mut connection: Option<Connection> = None;
    while let Ok(call) = calls.recv() {
        if connection.as_ref().is_none_or(Connection::is_broken) {
            connection = match connect(&database).await {
                Ok(connected) => Some(connected),
                Err(error) => {
                    answer_failed(call, format!("the catalog's database: {error}"));
                    continue;
                }
            };
        }
        let session = connection.as_mut().expect("connected above");
        match call {
            Call::Load(table, answer) => {
                let _ = answer.send(load(session, &name, &table).await.map_err(text));
            }
            Call::Create(table, location, answer) => {
                let created = create(session, &name, &table, &location).await;
                let _ = answer.send(created.map_err(text));
            }
            Call::Swap(table, expected, next, answer) => {
                let params = [
                    Param::Text(&next),
                    Param::Text(&expected),
                    Param::Text(&name),
                    Param::Text(&table.namespace),
                    Param::Text(&table.table),
                ];
                let swapped = session.execute(SWAP, &params).await;
                let _ = answer.send(swapped.map(|rows| rows == 1).map_err(text));
            }
        }
    }
}

fn text(error: PgError) -> String {
    format!("the catalog's database: {error}")
}

fn answer_failed(call: Call, why: String) {
    // A caller that gave up waiting is gone: nothing to tell it.
    match call {
        Call::Load(_, answer) => drop(answer.send(Err(why))),
        Call::Create(_, _, answer) => drop(answer.send(Err(why))),
        Call::Swap(_, _, _, answer) => drop(answer.send(Err(why))),
    }
}

/// A connection, with the catalog's tables made when missing (and moved to the V1 layout).
async fn connect(database: &PgConfig) -> Result<Connection, PgError> {
    let mut connection = Connection::connect(database).await?;
    for statement in CREATE_TABLES {
        connection.batch_execute(statement).await?;
    }
    if connection.batch_execute(HAS_TYPE_COLUMN).await.is_err() {
        // Another broker may move it to V1 at the same time: its column counts too.
        if let Err(e) = connection.batch_execute(ADD_TYPE_COLUMN).await {
            connection
                .batch_execute(HAS_TYPE_COLUMN)
                .await
                .map_err(|_| e)?;
        }
    }
    Ok(connection)
}

async fn load(
    session: &mut Connection,
    name: &str,
    table: &TableName,
) -> Result<Option<String>, PgError> {
    let params = [
        Param::Text(name),
        Param::Text(&table.namespace),
        Param::Text(&table.table),
    ];
    let rows = session.query(LOAD, &params).await?;
    match rows.first() {
        Some(row) if row.bytes(0)?.is_some() => Ok(Some(row.text(0)?.to_string())),
        _ => Ok(None),
    }
}

async fn create(
    session: &mut Connection,
    name: &str,
    table: &TableName,
    location: &str,
) -> Result<bool, PgError> {
    session
        .execute(
            CREATE_NAMESPACE,
            &[Param::Text(name), Param::Text(&table.namespace)],
        )
        .await?;
    let params = [
        Param::Text(name),
        Param::Text(&table.namespace),
        Param::Text(&table.table),
        Param::Text(location),
    ];
    Ok(session.execute(CREATE_TABLE, &params).await? == 1)
}
