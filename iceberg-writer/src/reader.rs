//! What a table commit takes: a topic's committed records from each partition's position on,
//! read as a read_committed consumer reads them (through the broker's own listener), as rows.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use shoal_cli::offsets::{list_offsets, EARLIEST, READ_COMMITTED};
use shoal_cli::Admin;
use shoal_iceberg::Row;
use shoal_protocol::kafka_protocol::protocol::StrBytes;
use shoal_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use shoal_protocol::messages::{BrokerId, FetchRequest, TopicName};
use shoal_protocol::ResponseError;
use shoal_wal::committed::walk_committed;
use shoal_wal::records::{inflate_payload, keyed_records};

const FETCH_VERSION: i16 = 12;
const PARTITION_MAX_BYTES: i32 = 1 << 20;
const RESPONSE_MAX_BYTES: i32 = 16 << 20;
/// A batch may not inflate past this: a compressed bomb stops here.
const INFLATED_MAX_BYTES: usize = 64 << 20;

/// The rows read, and where each partition's next read starts.
pub struct Read {
    pub rows: Vec<Row>,
    pub next_offsets: BTreeMap<i32, i64>,
    /// The read stopped at its byte bound with records left to read.
    pub more: bool,
    /// Each partition's last stable offset, as its last fetch answered.
    pub last_stable: BTreeMap<i32, i64>,
}

impl Read {
    /// Committed records past `taken` (per partition, where a table stands).
    pub fn records_after(&self, taken: &BTreeMap<i32, i64>) -> i64 {
        (self.last_stable.iter())
            .map(|(p, stable)| (stable - taken.get(p).copied().unwrap_or(0)).max(0))
            .sum()
    }
}

/// `topic`'s committed records from `from` on (a partition it lacks: from its log start),
/// until every partition is read up to its last stable offset or about `max_bytes` are read.
pub fn read_committed(
    admin: &mut Admin,
    topic: &str,
    from: &BTreeMap<i32, i64>,
    max_bytes: u64,
) -> Result<Read, String> {
    let leaders = admin.leaders(topic).map_err(|e| e.to_string())?;
    let mut positions = from.clone();
    let unknown: BTreeSet<(String, i32)> = (leaders.keys())
        .filter(|p| !positions.contains_key(p))
        .map(|p| (topic.to_string(), *p))
        .collect();
    if !unknown.is_empty() {
        for ((_, p), start) in earliest(admin, &unknown)? {
            positions.insert(p, start);
        }
    }
    let mut rows = Vec::new();
    let mut bytes = 0u64;
    let mut last_stable = BTreeMap::new();
    loop {
        let mut moved = false;
        for (leader, request) in requests_by_leader(topic, &leaders, &positions) {
            let answer = admin
                .call_node(leader, FETCH_VERSION, &request)
                .map_err(|e| e.to_string())?;
            if answer.error_code != 0 {
                return Err(format!("{topic}: fetch error {}", answer.error_code));
            }
            for p in answer.responses.into_iter().flat_map(|t| t.partitions) {
                let partition = p.partition_index;
                let Some(position) = positions.get(&partition).copied() else {
                    continue;
                };
                // The position was deleted (retention) before the table took it.
                if p.error_code == ResponseError::OffsetOutOfRange.code() {
                    let start = skip_deleted(admin, topic, partition, position)?;
                    positions.insert(partition, start);
                    moved = true;
                    continue;
                }
                if p.error_code != 0 {
                    return Err(format!("{topic} {partition}: fetch error {}", p.error_code));
                }
                last_stable.insert(partition, p.last_stable_offset);
                let records = p.records.unwrap_or_default();
                bytes += records.len() as u64;
                let aborted = (p.aborted_transactions.unwrap_or_default().iter())
                    .map(|a| (a.producer_id.0, a.first_offset))
                    .collect();
                let next = take_rows(partition, position, &records, aborted, &mut rows)?;
                if next > position {
                    positions.insert(partition, next);
                    moved = true;
                }
            }
        }
        if !moved || bytes >= max_bytes {
            return Ok(Read {
                rows,
                next_offsets: positions,
                more: moved,
                last_stable,
            });
        }
    }
}

/// Each partition's log start offset.
fn earliest(
    admin: &mut Admin,
    partitions: &BTreeSet<(String, i32)>,
) -> Result<BTreeMap<(String, i32), i64>, String> {
    list_offsets(admin, partitions, |_| EARLIEST, READ_COMMITTED).map_err(|e| e.to_string())
}

/// One Fetch per partition leader, each partition from its position, read_committed.
fn requests_by_leader(
    topic: &str,
    leaders: &BTreeMap<i32, i32>,
    positions: &BTreeMap<i32, i64>,
) -> Vec<(i32, FetchRequest)> {
    let mut by_leader: BTreeMap<i32, Vec<FetchPartition>> = BTreeMap::new();
    for (p, leader) in leaders {
        by_leader.entry(*leader).or_default().push(
            FetchPartition::default()
                .with_partition(*p)
                .with_current_leader_epoch(-1)
                .with_fetch_offset(positions[p])
                .with_log_start_offset(-1)
                .with_partition_max_bytes(PARTITION_MAX_BYTES),
        );
    }
    (by_leader.into_iter())
        .map(|(leader, partitions)| {
            let request = FetchRequest::default()
                .with_replica_id(BrokerId(-1))
                .with_max_wait_ms(0)
                .with_min_bytes(1)
                .with_max_bytes(RESPONSE_MAX_BYTES)
                .with_isolation_level(READ_COMMITTED)
                .with_session_id(0)
                .with_session_epoch(-1)
                .with_topics(vec![FetchTopic::default()
                    .with_topic(TopicName(StrBytes::from_string(topic.to_string())))
                    .with_partitions(partitions)]);
            (leader, request)
        })
        .collect()
}

/// The committed records of one partition's fetched batches from `position` on, as rows;
/// returns the offset after the last batch walked.
fn take_rows(
    partition: i32,
    position: i64,
    records: &Bytes,
    aborted: Vec<(i64, i64)>,
    rows: &mut Vec<Row>,
) -> Result<i64, String> {
    walk_committed(records, position, aborted, |batch, header| {
        // One buffer a batch: the rows' keys and values are slices of it.
        let inflated = Bytes::from(
            inflate_payload(batch, header, INFLATED_MAX_BYTES).map_err(|e| e.to_string())?,
        );
        for record in keyed_records(&inflated, header).map_err(|e| e.to_string())? {
            let offset = header.base_offset + i64::from(record.offset_delta);
            if offset < position {
                continue;
            }
            let timestamp_ms = match header.is_log_append_time() {
                true => header.max_timestamp,
                false => header.base_timestamp.saturating_add(record.timestamp_delta),
            };
            let copy = |b: Option<&[u8]>| b.map(|part| inflated.slice_ref(part));
            rows.push(Row {
                partition,
                offset,
                timestamp_ms,
                key: copy(record.key),
                value: copy(record.value),
                headers: (record.headers.iter())
                    .map(|(k, v)| (String::from_utf8_lossy(k).into_owned(), copy(*v)))
                    .collect(),
            });
        }
        Ok(None)
    })
}

/// Where a partition goes on when its position was deleted (retention) before the table
/// took it: its earliest offset, said in a warning.
fn skip_deleted(
    admin: &mut Admin,
    topic: &str,
    partition: i32,
    position: i64,
) -> Result<i64, String> {
    let wanted = BTreeSet::from([(topic.to_string(), partition)]);
    let start = earliest(admin, &wanted)?
        .into_values()
        .next()
        .unwrap_or(position);
    tracing::warn!(
        topic,
        partition,
        from = position,
        to = start,
        "records deleted before the table took them: the table skips them"
    );
    Ok(start)
}
