//! The writer's rounds: which topics have tables, and one commit per table per round.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use shoal_cli::{offsets, Admin};
use shoal_iceberg::append::{self, NewRows};
use shoal_iceberg::catalog::{Catalog, TableName};
use shoal_iceberg::metadata;
use shoal_iceberg::sql_catalog::SqliteCatalog;
use shoal_metalog::Duties;
use shoal_protocol::kafka_protocol::protocol::StrBytes;
use shoal_protocol::messages::describe_configs_request::DescribeConfigsResource;
use shoal_protocol::messages::DescribeConfigsRequest;

use super::pg_catalog::PgCatalog;
use super::rest_catalog::RestCatalog;

use super::warehouse::Warehouse;
use shoal_coordinator::topic_configs::ICEBERG_ENABLED;
use shoal_iceberg::table_schema::TableSchema;
use shoal_iceberg::Row;
use shoal_protocol::config_codes::ConfigResource;
use shoal_shards::table_progress;

use super::compaction;
use super::convert::{self, Converted};
use super::reader::{read_committed, Read};
use super::tables::{Loaded, Tables};
use super::value_schemas::ValueSchemas;
use crate::config::BadRecords;
use crate::setup::{CatalogSetup, WriterSetup};

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
    // A table's form (bytes, or its values' fields) comes from its first records: a round
    // that read none makes no table.
    if read.next_offsets == from || (existing.is_none() && read.rows.is_empty()) {
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
    let converted = convert::convert(&read.rows, &table_schema, schemas)?;
    let mut taken = Taken {
        rows: Cow::Borrowed(&read.rows),
        next_offsets: read.next_offsets.clone(),
        converted,
        stops: Vec::new(),
        dead_letters: 0,
    };
    if !taken.converted.bad.is_empty() {
        match setup.config.bad_records {
            BadRecords::Stop => stop_before_bad(&mut taken, &table_schema, schemas)?,
            BadRecords::DeadLetter => set_aside_bad(setup, tables, table_topic, table, &mut taken)?,
        }
    }
    let committed = taken.next_offsets != from && (existing.is_some() || !taken.rows.is_empty());
    if committed {
        let existing = match existing {
            Some(existing) => existing,
            None => {
                // The table's first schema is the one its first rows are written with.
                taken.converted.schema.schema_id = 0;
                tables.create(table, &table_topic.id, &taken.converted.schema)?
            }
        };
        append_taken(setup, admin, tables, (topic, table), existing, &taken)?;
    }
    for stop in &taken.stops {
        tracing::warn!(%topic, why = %stop.why, "table writer: a partition stops before a bad record");
    }
    record_progress(topic, &read, &taken, committed);
    // A stopped partition is read again from its bad record each round: with one, rounds
    // keep their interval rather than reread it at once.
    Ok(read.more && taken.stops.is_empty())
}

/// Appends what `taken` took to `topic`'s table (`existing`), and commits the table's
/// positions to its group.
fn append_taken(
    setup: &WriterSetup,
    admin: &mut Admin,
    tables: &Tables,
    (topic, table): (&str, &TableName),
    existing: Loaded,
    taken: &Taken<'_>,
) -> Result<(), String> {
    let new = NewRows {
        rows: &taken.rows,
        schema: &taken.converted.schema,
        values: taken.converted.values.as_ref(),
    };
    append_to(setup, tables, table, existing, &new, &taken.next_offsets)?;
    tracing::debug!(%topic, rows = taken.rows.len(), "table commit");
    if let Err(why) = publish_positions(admin, topic, &taken.next_offsets) {
        tracing::debug!(%topic, %why, "table writer: the table's positions were not committed to its group");
    }
    Ok(())
}

/// The table's progress after a round that read `read` and took `taken` (`committed`: made
/// a snapshot of it).
fn record_progress(topic: &str, read: &Read, taken: &Taken<'_>, committed: bool) {
    table_progress::update(topic, |progress| {
        if committed {
            progress.commits += 1;
            progress.rows += taken.rows.len() as u64;
        }
        progress.dead_letters += taken.dead_letters;
        progress.failed_commits += u64::from(!taken.stops.is_empty());
        progress.lag_records = read.records_after(&taken.next_offsets);
        // The records left are at least as old as the first one waiting: a bad record a
        // partition stops before, or past the byte bound, the last one read.
        let stopped_at = taken.stops.iter().map(|stop| stop.timestamp_ms).min();
        let past_the_bound = read.rows.last().filter(|_| read.more);
        let waiting = stopped_at.or(past_the_bound.map(|last| last.timestamp_ms));
        progress.lag_seconds = waiting.map_or(0, seconds_since);
    });
}

/// What one commit takes of the rows read.
struct Taken<'a> {
    rows: Cow<'a, [Row]>,
    /// Where each partition stands after them.
    next_offsets: BTreeMap<i32, i64>,
    /// Their values as the table's columns, and the bad records among them.
    converted: Converted,
    /// The partitions stopped before a bad record (`bad_records = "stop"`).
    stops: Vec<Stop>,
    /// Bad records set aside in the dead-letter table (`bad_records = "dead_letter"`).
    dead_letters: u64,
}

/// A partition stopped before a bad record.
struct Stop {
    timestamp_ms: i64,
    why: String,
}

/// `bad_records = "stop"`: each partition with a bad record takes the rows before it and
/// stops there; the other partitions take all they read. The rows kept are converted again,
/// without the schemas of those left out (until none is bad: each pass keeps fewer rows).
fn stop_before_bad(
    taken: &mut Taken<'_>,
    table_schema: &TableSchema,
    schemas: &mut ValueSchemas,
) -> Result<(), String> {
    while !taken.converted.bad.is_empty() {
        let mut stop_at: BTreeMap<i32, i64> = BTreeMap::new();
        // In the order read, so a partition's first bad record has its lowest offset.
        for bad in &taken.converted.bad {
            let row = &taken.rows[bad.index];
            if stop_at.contains_key(&row.partition) {
                continue;
            }
            stop_at.insert(row.partition, row.offset);
            taken.stops.push(Stop {
                timestamp_ms: row.timestamp_ms,
                why: format!(
                    "partition {} offset {} cannot become the table's columns: {}; the \
                     partition stops before it",
                    row.partition, row.offset, bad.why
                ),
            });
        }
        let kept: Vec<Row> = (taken.rows.iter())
            .filter(|row| {
                stop_at
                    .get(&row.partition)
                    .is_none_or(|at| row.offset < *at)
            })
            .cloned()
            .collect();
        for (partition, at) in stop_at {
            taken.next_offsets.insert(partition, at);
        }
        taken.converted = convert::convert(&kept, table_schema, schemas)?;
        taken.rows = Cow::Owned(kept);
    }
    Ok(())
}

/// `bad_records = "dead_letter"`: the bad records go to the dead-letter table, and the
/// table takes the others.
fn set_aside_bad(
    setup: &WriterSetup,
    tables: &Tables,
    table_topic: &TableTopic,
    table: &TableName,
    taken: &mut Taken<'_>,
) -> Result<(), String> {
    // The dead letters are committed first, up to the same offsets: if the topic's table
    // then fails to commit, its next try finds them there and skips them.
    let bad: Vec<(&Row, &str)> = (taken.converted.bad.iter())
        .map(|b| (&taken.rows[b.index], b.why.as_str()))
        .collect();
    set_aside(setup, tables, table_topic, table, &bad, &taken.next_offsets)?;
    let mut is_bad = vec![false; taken.rows.len()];
    taken
        .converted
        .bad
        .iter()
        .for_each(|b| is_bad[b.index] = true);
    let good: Vec<Row> = (taken.rows.iter().zip(is_bad))
        .filter(|(_, bad)| !bad)
        .map(|(row, _)| row.clone())
        .collect();
    taken.dead_letters = taken.converted.bad.len() as u64;
    taken.rows = Cow::Owned(good);
    Ok(())
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
