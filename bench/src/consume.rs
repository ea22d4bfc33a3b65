//! The consumer side: one connection fetching every partition in a loop, counting records and,
//! from the send time stamped into each batch, the end-to-end latency.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kafka_protocol::protocol::StrBytes;
use shoal_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use shoal_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use shoal_protocol::messages::{
    BrokerId, FetchRequest, FetchResponse, ListOffsetsRequest, ListOffsetsResponse, TopicName,
};

use crate::batch;
use crate::kafka;
use crate::secure::Security;
use crate::stats::{histogram, LiveStats};
use crate::BenchError;

const FETCH_VERSION: i16 = 11;
const LIST_OFFSETS_VERSION: i16 = 1;

#[derive(Debug, Clone)]
pub struct ConsumeOptions {
    pub bootstrap: String,
    pub security: Security,
    pub topic: String,
    pub partitions: i32,
    /// Start at the end (tailing) rather than the beginning (catch-up).
    pub from_end: bool,
    pub duration: Duration,
    /// Stop early once this many records were read.
    pub records: Option<u64>,
    pub max_wait_ms: i32,
    pub fetch_max_bytes: i32,
    pub partition_max_bytes: i32,
    pub cpus: Vec<usize>,
}

pub struct ConsumeResult {
    pub records: u64,
    pub bytes: u64,
    pub elapsed: Duration,
    /// Send time (stamped by the producer) to arrival here.
    pub end_to_end_us: hdrhistogram::Histogram<u64>,
}

fn topic_name(topic: &str) -> TopicName {
    TopicName(StrBytes::from_string(topic.to_string()))
}

fn start_offsets(opts: &ConsumeOptions) -> Result<Vec<i64>, BenchError> {
    let mut stream = kafka::connect(&opts.bootstrap, &opts.security)?;
    let timestamp = if opts.from_end { -1 } else { -2 };
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(topic_name(&opts.topic))
            .with_partitions(
                (0..opts.partitions)
                    .map(|p| {
                        ListOffsetsPartition::default()
                            .with_partition_index(p)
                            .with_timestamp(timestamp)
                    })
                    .collect(),
            )]);
    let frame = kafka::encode_request(LIST_OFFSETS_VERSION, 1, &request)?;
    stream.write_all(&frame).map_err(BenchError::Io)?;
    let response: ListOffsetsResponse = kafka::read_response(&mut stream, LIST_OFFSETS_VERSION)?;
    let mut offsets = vec![0; opts.partitions as usize];
    for p in response.topics.iter().flat_map(|t| t.partitions.iter()) {
        if p.error_code != 0 {
            return Err(BenchError::Protocol(format!(
                "ListOffsets partition {}: error {}",
                p.partition_index, p.error_code
            )));
        }
        offsets[p.partition_index as usize] = p.offset;
    }
    Ok(offsets)
}

pub fn run(
    opts: &ConsumeOptions,
    stats: Arc<LiveStats>,
    stop: Arc<AtomicBool>,
) -> Result<ConsumeResult, BenchError> {
    crate::pin(&opts.cpus, 0);
    let mut offsets = start_offsets(opts)?;
    let mut stream = kafka::connect(&opts.bootstrap, &opts.security)?;
    let mut e2e = histogram();
    let started = Instant::now();
    let deadline = started + opts.duration;
    let mut correlation_id = 0;
    while Instant::now() < deadline && !stop.load(Ordering::Relaxed) {
        if opts
            .records
            .is_some_and(|n| stats.records.load(Ordering::Relaxed) >= n)
        {
            break;
        }
        let request = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(opts.max_wait_ms)
            .with_min_bytes(1)
            .with_max_bytes(opts.fetch_max_bytes)
            .with_session_epoch(-1)
            .with_topics(vec![FetchTopic::default()
                .with_topic(topic_name(&opts.topic))
                .with_partitions(
                    offsets
                        .iter()
                        .enumerate()
                        .map(|(p, offset)| {
                            FetchPartition::default()
                                .with_partition(p as i32)
                                .with_fetch_offset(*offset)
                                .with_partition_max_bytes(opts.partition_max_bytes)
                        })
                        .collect(),
                )]);
        correlation_id += 1;
        let frame = kafka::encode_request(FETCH_VERSION, correlation_id, &request)?;
        stream.write_all(&frame).map_err(BenchError::Io)?;
        let response: FetchResponse = kafka::read_response(&mut stream, FETCH_VERSION)?;
        let now_us = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as i64)
            .unwrap_or(0);
        for partition in response.responses.iter().flat_map(|t| t.partitions.iter()) {
            if partition.error_code != 0 {
                stats.errors.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let Some(records) = &partition.records else {
                continue;
            };
            let index = partition.partition_index as usize;
            for (base, count, first_ts, bytes) in batch::batches_in(records) {
                if base + count <= offsets[index] {
                    continue; // already counted
                }
                offsets[index] = base + count;
                stats.add(count as u64, bytes as u64);
                let latency = (now_us - first_ts * 1000).max(1) as u64;
                e2e.record_n(latency, count as u64).ok();
            }
        }
    }
    Ok(ConsumeResult {
        records: stats.records.load(Ordering::Relaxed),
        bytes: stats.bytes.load(Ordering::Relaxed),
        elapsed: started.elapsed(),
        end_to_end_us: e2e,
    })
}
