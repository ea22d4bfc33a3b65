//! The writer's rounds: which topics have tables, and one commit per table per round.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::DescribeConfigsRequest;
use kafka_protocol::protocol::StrBytes;
use shoal_cli::{offsets, Admin};
use shoal_iceberg::append::{self, NewRows};
use shoal_iceberg::catalog::{Catalog, TableName};
use shoal_iceberg::metadata;
use shoal_iceberg::sql_catalog::SqliteCatalog;
use shoal_metalog::Duties;

use super::pg_catalog::PgCatalog;
use super::rest_catalog::RestCatalog;

use super::warehouse::Warehouse;
use shoal_coordinator::topic_configs::ICEBERG_ENABLED;
use shoal_iceberg::table_schema::TableSchema;
use shoal_iceberg::Row;
use shoal_protocol::config_codes::ConfigResource;
use shoal_shards::table_progress;

use super::reader::read_committed;
use super::tables::{Loaded, Tables};
use super::value_schemas::ValueSchemas;
use super::{compaction, convert};
use super::{BadRecords, CatalogSetup, WriterSetup};

const DESCRIBE_CONFIGS_VERSION: i16 = 4;
/// A topic table's dead-letter table is named after it with this.
pub const DEAD_LETTERS_SUFFIX: &str = "_dead_letters";

pub fn run(setup: WriterSetup, duties: Duties) {
    let interval = Duration::from_millis(setup.config.commit_interval_ms);
    let mut admin: Option<Admin> = None;
    let mut tables: Option<Tables> = None;
    let mut schemas = match ValueSchemas::new(setup.schema_registry.as_ref()) {
        Ok(schemas) => schemas,
        Err(why) => {
            tracing::error!(%why, "table writer: the schema registry's URL; tables are not written");
            return;
        }
    };
    // The first round waits an interval too: the broker's listeners are up by then. A table
    // whose commit stopped at max_bytes_per_commit is behind: the next round starts at once.
    let mut round_started = Instant::now();
    let mut behind = false;
    loop {
        if !behind {
            std::thread::sleep(interval.saturating_sub(round_started.elapsed()));
        }
        round_started = Instant::now();
        // Another broker of the cluster writes the tables meanwhile; a table's metadata is
        // read afresh each round, so taking over starts from where that one committed.
        if !duties.held() {
            behind = false;
            continue;
        }
        behind = match round(&setup, &mut admin, &mut tables, &mut schemas) {
            Ok(behind) => behind,
            Err(why) => {
                tracing::warn!(%why, "table writer: the round failed; the next one retries");
                admin = None;
                false
            }
        };
    }
}

/// One commit for each table; whether some table has more to take at once.
fn round(
    setup: &WriterSetup,
    admin: &mut Option<Admin>,
    tables: &mut Option<Tables>,
    schemas: &mut ValueSchemas,
) -> Result<bool, String> {
    if admin.is_none() {
        *admin = Some(
            Admin::connect(&setup.bootstrap, setup.security.clone()).map_err(|e| e.to_string())?,
        );
    }
    let admin = admin.as_mut().expect("just connected");
    if tables.is_none() {
        let name = &setup.config.catalog_name;
        let catalog: Box<dyn Catalog> = match &setup.catalog {
            CatalogSetup::Sqlite(file) => {
                Box::new(SqliteCatalog::open(file, name).map_err(|e| e.to_string())?)
            }
            CatalogSetup::Postgres(database) => {
                Box::new(PgCatalog::start(database.clone(), name.clone())?)
            }
            CatalogSetup::Rest(rest) => Box::new(RestCatalog::connect(rest)?),
        };
        *tables = Some(Tables {
            catalog,
            warehouse: Warehouse::open(&setup.warehouse)?,
        });
    }
    let tables = tables.as_ref().expect("just opened");
    let mut behind = false;
    let topics = table_topics(admin)?;
    let names: Vec<String> = topics.iter().map(|t| t.name.clone()).collect();
    table_progress::retain(&names);
    for topic in &topics {
        let table = TableName {
            namespace: setup.config.namespace.clone(),
            table: topic.name.clone(),
        };
        let topic_name = &topic.name;
        match commit(setup, admin, tables, schemas, topic, &table) {
            Ok(more) => behind |= more,
            Err(why) => {
                table_progress::update(topic_name, |progress| progress.failed_commits += 1);
                tracing::warn!(topic = %topic_name, %why, "table writer: no commit this round")
            }
        }
        if let Err(why) = compaction::compact(setup, tables, &table) {
            tracing::warn!(topic = %topic_name, %why, "table writer: no compaction this round");
        }
    }
    Ok(behind)
}

/// A topic the writer keeps a table of.
struct TableTopic {
    name: String,
    /// Its id, which its table names (`metadata::TOPIC_ID_PROPERTY`).
    id: String,
}

/// The topics with `shoal.iceberg.enabled=true`.
fn table_topics(admin: &mut Admin) -> Result<Vec<TableTopic>, String> {
    let metadata = admin.metadata(None).map_err(|e| e.to_string())?;
    let ids: BTreeMap<String, String> = (metadata.topics.iter())
        .filter_map(|t| Some((t.name.as_ref()?.to_string(), t.topic_id.to_string())))
        .collect();
    let names: Vec<&String> = ids.keys().collect();
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let request = DescribeConfigsRequest::default().with_resources(
        names
            .iter()
            .map(|name| {
                DescribeConfigsResource::default()
                    .with_resource_type(ConfigResource::Topic as i8)
                    .with_resource_name(StrBytes::from_string((*name).clone()))
                    .with_configuration_keys(Some(vec![StrBytes::from_static_str(ICEBERG_ENABLED)]))
            })
            .collect(),
    );
    let answer = admin
        .call(DESCRIBE_CONFIGS_VERSION, &request)
        .map_err(|e| e.to_string())?;
    Ok(answer
        .results
        .iter()
        .filter(|r| r.error_code == 0)
        .filter(|r| {
            r.configs
                .iter()
                .any(|c| c.name.as_str() == ICEBERG_ENABLED && c.value.as_deref() == Some("true"))
        })
        .filter_map(|r| {
            let name = r.resource_name.to_string();
            let id = ids.get(&name)?.clone();
            Some(TableTopic { name, id })
        })
        .collect())
}

/// One commit of `topic`'s new committed records to its table (created first if missing);
/// whether records were left for the next.
fn commit(
    setup: &WriterSetup,
    admin: &mut Admin,
    tables: &Tables,
    schemas: &mut ValueSchemas,
    table_topic: &TableTopic,
    table: &TableName,
) -> Result<bool, String> {
    let topic = table_topic.name.as_str();
    let existing = tables.load(table)?;
    if let Some((location, metadata)) = &existing {
        check_topic(table, location, metadata, &table_topic.id)?;
    }
    let from = match &existing {
        Some((_, metadata)) => metadata::next_offsets(metadata).map_err(|e| e.to_string())?,
        None => BTreeMap::new(),
    };
    let read = read_committed(admin, topic, &from, setup.config.max_bytes_per_commit)?;
    if read.next_offsets == from {
        table_progress::update(topic, |progress| {
            progress.lag_records = read.records_after(&from);
            progress.lag_seconds = 0;
        });
        return Ok(false);
    }
    let table_schema = match &existing {
        Some((location, metadata)) => {
            TableSchema::of_metadata(metadata, location).map_err(|e| e.to_string())?
        }
        None => convert::new_table_schema(&read.rows, schemas)?,
    };
    let mut converted = convert::convert(&read.rows, &table_schema, schemas)?;
    let good_rows;
    let rows = match converted.bad.first() {
        None => &read.rows,
        Some(bad) if setup.config.bad_records == BadRecords::Stop => {
            let row = &read.rows[bad.index];
            table_progress::update(topic, |progress| {
                progress.lag_records = read.records_after(&from);
                progress.lag_seconds = seconds_since(row.timestamp_ms);
            });
            return Err(format!(
                "partition {} offset {} cannot become the table's columns: {}; the table stops \
                 before it",
                row.partition, row.offset, bad.why
            ));
        }
        Some(_) => {
            // The dead letters are committed first, up to the same offsets: if the topic's
            // table then fails to commit, its next try finds them there and skips them.
            let bad: Vec<(&Row, &str)> = (converted.bad.iter())
                .map(|b| (&read.rows[b.index], b.why.as_str()))
                .collect();
            set_aside(setup, tables, table_topic, table, &bad, &read.next_offsets)?;
            let mut is_bad = vec![false; read.rows.len()];
            converted.bad.iter().for_each(|b| is_bad[b.index] = true);
            good_rows = (read.rows.iter().zip(is_bad))
                .filter(|(_, bad)| !bad)
                .map(|(row, _)| row.clone())
                .collect::<Vec<_>>();
            &good_rows
        }
    };
    let existing = match existing {
        Some(existing) => existing,
        None => {
            // The table's first schema is the one its first rows are written with.
            converted.schema.schema_id = 0;
            tables.create(table, &table_topic.id, &converted.schema)?
        }
    };
    let new = NewRows {
        rows,
        schema: &converted.schema,
        values: converted.values.as_ref(),
    };
    append_to(setup, tables, table, existing, &new, &read.next_offsets)?;
    tracing::debug!(%topic, rows = rows.len(), "table commit");
    if let Err(why) = publish_positions(admin, topic, &read.next_offsets) {
        tracing::debug!(%topic, %why, "table writer: the table's positions were not committed to its group");
    }
    table_progress::update(topic, |progress| {
        progress.commits += 1;
        progress.rows += rows.len() as u64;
        progress.dead_letters += converted.bad.len() as u64;
        progress.lag_records = read.records_after(&read.next_offsets);
        // Stopped at the byte bound: the records left are at least as old as the last read.
        progress.lag_seconds = match (read.more, read.rows.last()) {
            (true, Some(last)) => seconds_since(last.timestamp_ms),
            _ => 0,
        };
    });
    Ok(read.more)
}

/// Commits the table's positions as its group's offsets (`offsets::table_group`).
fn publish_positions(
    admin: &mut Admin,
    topic: &str,
    next_offsets: &BTreeMap<i32, i64>,
) -> Result<(), String> {
    let group = offsets::table_group(topic);
    let coordinator = admin.group_coordinator(&group).map_err(|e| e.to_string())?;
    let positions = (next_offsets.iter())
        .map(|(p, o)| ((topic.to_string(), *p), *o))
        .collect();
    offsets::commit(admin, coordinator, &group, &positions).map_err(|e| e.to_string())
}

/// Refuses a table that holds another topic's records than the one with id `topic_id`: one
/// of an earlier topic of the same name (whose offsets started again), or another topic's
/// whose table has the same name (topic `t`'s dead letters and a topic named
/// `t_dead_letters`). Tables made before the property was written hold no id: taken as this
/// topic's.
fn check_topic(
    table: &TableName,
    location: &str,
    metadata: &serde_json::Value,
    topic_id: &str,
) -> Result<(), String> {
    let holds = metadata["properties"][metadata::TOPIC_ID_PROPERTY].as_str();
    match holds {
        Some(id) if id != topic_id => Err(format!(
            "the table {}.{} ({location}) holds the records of another topic (id {id}), not \
             of this one (id {topic_id}): an earlier topic of this name, whose offsets start \
             again, or, where one name ends in {DEAD_LETTERS_SUFFIX}, the other topic's dead \
             letters. Drop the table from the catalog (and its dead-letter table) for a new \
             one to be made, or rename one of the topics",
            table.namespace, table.table
        )),
        _ => Ok(()),
    }
}

/// Seconds from a record's timestamp to now (0 for one from the future).
fn seconds_since(timestamp_ms: i64) -> i64 {
    (shoal_shards::maintenance::now_ms() - timestamp_ms).max(0) / 1000
}

/// Commits `bad` records to the table's dead-letter table (`<table>_dead_letters`), but those
/// an earlier try committed already; it then takes `next_offsets` too.
fn set_aside(
    setup: &WriterSetup,
    tables: &Tables,
    topic: &TableTopic,
    table: &TableName,
    bad: &[(&Row, &str)],
    next_offsets: &BTreeMap<i32, i64>,
) -> Result<(), String> {
    let dead_letters = TableName {
        namespace: table.namespace.clone(),
        table: format!("{}{DEAD_LETTERS_SUFFIX}", table.table),
    };
    let schema = TableSchema::dead_letters();
    let existing = match tables.load(&dead_letters)? {
        Some(existing) => {
            check_topic(&dead_letters, &existing.0, &existing.1, &topic.id)?;
            existing
        }
        None => tables.create(&dead_letters, &topic.id, &schema)?,
    };
    let taken = metadata::next_offsets(&existing.1).map_err(|e| e.to_string())?;
    let new_bad: Vec<(&Row, &str)> = (bad.iter().copied())
        .filter(|(row, _)| row.offset >= taken.get(&row.partition).copied().unwrap_or(0))
        .collect();
    if new_bad.is_empty() {
        return Ok(());
    }
    let mut offsets = taken;
    for (partition, next) in next_offsets {
        let at = offsets.entry(*partition).or_insert(*next);
        *at = (*at).max(*next);
    }
    let rows: Vec<Row> = new_bad.iter().map(|(row, _)| (*row).clone()).collect();
    let values = convert::dead_letter_values(&new_bad)?;
    let new = NewRows {
        rows: &rows,
        schema: &schema,
        values: Some(&values),
    };
    append_to(setup, tables, &dead_letters, existing, &new, &offsets)?;
    tracing::warn!(namespace = %table.namespace, table = %dead_letters.table, records = rows.len(), "records set aside in the dead-letter table");
    Ok(())
}

/// Appends `new` to the table `existing` is, after which it takes `next_offsets`.
fn append_to(
    setup: &WriterSetup,
    tables: &Tables,
    table: &TableName,
    existing: Loaded,
    new: &NewRows<'_>,
    next_offsets: &BTreeMap<i32, i64>,
) -> Result<(), String> {
    let from = tables.state(existing)?;
    let now_ms = shoal_shards::maintenance::now_ms();
    let retention = setup.config.retention();
    let planned =
        append::plan(&from, new, next_offsets, &retention, now_ms).map_err(|e| e.to_string())?;
    tables.publish(table, &from, &planned)
}
