//! The producer side: connections each with a writer thread (sending on schedule) and a reader
//! thread (matching answers in order). With a target rate the schedule is fixed in advance
//! (open loop) and latency counts from the scheduled send time, so a stall shows up in the
//! latencies instead of silently slowing the load (no coordinated omission).

use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use kafka_protocol::protocol::StrBytes;
use shoal_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use shoal_protocol::messages::{ProduceRequest, ProduceResponse, TopicName};

use crate::batch;
use crate::kafka;
use crate::secure::Security;
use crate::stats::{histogram, LiveStats, SharedHistogram};
use crate::BenchError;

const PRODUCE_VERSION: i16 = 7;

#[derive(Debug, Clone)]
pub struct ProduceOptions {
    pub bootstrap: String,
    pub security: Security,
    pub topic: String,
    pub partitions: i32,
    pub message_bytes: usize,
    pub records_per_batch: usize,
    pub connections: usize,
    pub acks: i16,
    pub compression: String,
    pub duration: Duration,
    /// Total records/s over all connections; None runs closed-loop as fast as answers come.
    pub rate: Option<f64>,
    pub max_in_flight: usize,
    pub cpus: Vec<usize>,
    /// Values start with Confluent's wire-format prefix for this schema id.
    pub schema_id: Option<i32>,
}

pub struct ProduceResult {
    pub records: u64,
    pub bytes: u64,
    pub errors: u64,
    pub last_error_code: i32,
    pub elapsed: Duration,
    pub latency_us: hdrhistogram::Histogram<u64>,
    /// The slowest requests: when each was due (since the start) and how long it took, so
    /// that a tail can be told apart as one stall or spread over the run.
    pub slowest: Vec<Slow>,
}

/// One request among the slowest.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slow {
    pub due_s: f64,
    pub latency_ms: f64,
}

/// Requests kept in `ProduceResult::slowest`.
const SLOWEST_KEPT: usize = 20;

/// Keeps the `SLOWEST_KEPT` slowest of what it is shown.
fn keep_slowest(kept: &mut Vec<Slow>, slow: Slow) {
    if kept.len() < SLOWEST_KEPT {
        kept.push(slow);
    } else if let Some(fastest) = kept
        .iter_mut()
        .min_by(|a, b| a.latency_ms.total_cmp(&b.latency_ms))
        .filter(|fastest| fastest.latency_ms < slow.latency_ms)
    {
        *fastest = slow;
    }
}

struct InFlight {
    scheduled: Instant,
    records: u64,
    bytes: u64,
}

pub fn run(opts: &ProduceOptions, stats: Arc<LiveStats>) -> Result<ProduceResult, BenchError> {
    let codec = batch::compression(&opts.compression)?;
    let templates: Vec<Bytes> = (0..opts.partitions)
        .map(|p| {
            batch::template(
                opts.records_per_batch,
                opts.message_bytes,
                codec,
                p as u64 + 1,
                opts.schema_id,
            )
        })
        .collect::<Result<_, _>>()?;
    let templates = Arc::new(templates);
    let merged: SharedHistogram = Arc::new(Mutex::new(histogram()));
    let slowest = Arc::new(Mutex::new(Vec::new()));
    let started = Instant::now();
    let mut handles = Vec::new();
    for c in 0..opts.connections {
        let (reader_stream, stream) = kafka::connect(&opts.bootstrap, &opts.security)?.split()?;
        let (tx, rx) = crossbeam::channel::bounded::<InFlight>(opts.max_in_flight);
        let writer = Writer {
            connection: c,
            opts: opts.clone(),
            templates: templates.clone(),
            stats: stats.clone(),
            started,
        };
        let writer = std::thread::spawn(move || writer.run(stream, tx));
        let reader = Reader {
            connection: c,
            cpus: opts.cpus.clone(),
            acks: opts.acks,
            stats: stats.clone(),
            merged: merged.clone(),
            slowest: slowest.clone(),
            started,
        };
        let reader = std::thread::spawn(move || reader.run(reader_stream, rx));
        handles.push((writer, reader));
    }
    for (writer, reader) in handles {
        writer.join().map_err(|_| BenchError::Thread)??;
        reader.join().map_err(|_| BenchError::Thread)??;
    }
    let elapsed = started.elapsed();
    let latency_us = merged.lock().expect("not poisoned").clone();
    let mut slowest = std::mem::take(&mut *slowest.lock().expect("not poisoned"));
    slowest.sort_by(|a, b| a.due_s.total_cmp(&b.due_s));
    Ok(ProduceResult {
        records: stats.records.load(Ordering::Relaxed),
        bytes: stats.bytes.load(Ordering::Relaxed),
        errors: stats.errors.load(Ordering::Relaxed),
        last_error_code: stats.last_error_code.load(Ordering::Relaxed),
        elapsed,
        latency_us,
        slowest,
    })
}

/// One connection's sending thread: requests on schedule (or back to back), each handed to
/// the reader to time.
struct Writer {
    connection: usize,
    opts: ProduceOptions,
    templates: Arc<Vec<Bytes>>,
    stats: Arc<LiveStats>,
    started: Instant,
}

impl Writer {
    fn run(
        self,
        mut stream: impl Write,
        tx: crossbeam::channel::Sender<InFlight>,
    ) -> Result<(), BenchError> {
        let (c, opts) = (self.connection, &self.opts);
        crate::pin(&opts.cpus, c * 2);
        let deadline = self.started + opts.duration;
        // This connection's share of the rate, in requests per second.
        let interval = opts.rate.map(|rate| {
            let per_connection = rate / opts.connections as f64;
            Duration::from_secs_f64(opts.records_per_batch as f64 / per_connection)
        });
        let mut sent = 0u64;
        loop {
            let scheduled = match interval {
                Some(i) => self.started + i.mul_f64(sent as f64),
                None => Instant::now(),
            };
            if scheduled >= deadline {
                return Ok(());
            }
            if let Some(wait) = scheduled.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            let partition =
                ((c as u64 + sent * opts.connections as u64) % opts.partitions as u64) as i32;
            let now_ms = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_millis() as i64)
                .unwrap_or(0);
            let records = batch::stamped(&self.templates[partition as usize], now_ms);
            let bytes = records.len() as u64;
            let request = ProduceRequest::default()
                .with_acks(opts.acks)
                .with_timeout_ms(30_000)
                .with_topic_data(vec![TopicProduceData::default()
                    .with_name(TopicName(StrBytes::from_string(opts.topic.clone())))
                    .with_partition_data(vec![PartitionProduceData::default()
                        .with_index(partition)
                        .with_records(Some(records))])]);
            let frame = kafka::encode_request(PRODUCE_VERSION, sent as i32, &request)?;
            let in_flight = InFlight {
                scheduled,
                records: opts.records_per_batch as u64,
                bytes,
            };
            // Blocks while the window is full: back-pressure from the broker.
            if opts.acks != 0 && tx.send(in_flight).is_err() {
                return Ok(());
            }
            stream.write_all(&frame).map_err(BenchError::Io)?;
            if opts.acks == 0 {
                self.stats.add(opts.records_per_batch as u64, bytes);
            }
            sent += 1;
        }
    }
}

/// One connection's receiving thread: each answer timed against its request's schedule.
struct Reader {
    connection: usize,
    cpus: Vec<usize>,
    acks: i16,
    stats: Arc<LiveStats>,
    merged: SharedHistogram,
    slowest: Arc<Mutex<Vec<Slow>>>,
    started: Instant,
}

impl Reader {
    fn run(
        self,
        mut stream: impl Read,
        rx: crossbeam::channel::Receiver<InFlight>,
    ) -> Result<(), BenchError> {
        crate::pin(&self.cpus, self.connection * 2 + 1);
        let mut local = histogram();
        let mut local_slowest = Vec::new();
        if self.acks == 0 {
            return Ok(());
        }
        while let Ok(in_flight) = rx.recv() {
            let response: ProduceResponse = kafka::read_response(&mut stream, PRODUCE_VERSION)?;
            let failed = response
                .responses
                .iter()
                .flat_map(|t| t.partition_responses.iter())
                .map(|p| p.error_code)
                .find(|code| *code != 0);
            let micros = in_flight.scheduled.elapsed().as_micros() as u64;
            local.record(micros.max(1)).ok();
            let slow = Slow {
                due_s: in_flight
                    .scheduled
                    .duration_since(self.started)
                    .as_secs_f64(),
                latency_ms: micros as f64 / 1000.0,
            };
            keep_slowest(&mut local_slowest, slow);
            if let Some(code) = failed {
                self.stats.errors.fetch_add(1, Ordering::Relaxed);
                self.stats
                    .last_error_code
                    .store(code as i32, Ordering::Relaxed);
            } else {
                self.stats.add(in_flight.records, in_flight.bytes);
            }
        }
        self.merged.lock().expect("not poisoned").add(&local).ok();
        let mut kept = self.slowest.lock().expect("not poisoned");
        for slow in local_slowest {
            keep_slowest(&mut kept, slow);
        }
        Ok(())
    }
}

/// Stops the live progress line when dropped.
pub struct StopOnDrop(pub Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slowest_are_kept() {
        let mut kept = Vec::new();
        for i in 0..100 {
            let latency_ms = ((i * 37) % 100) as f64;
            keep_slowest(
                &mut kept,
                Slow {
                    due_s: i as f64,
                    latency_ms,
                },
            );
        }
        let mut latencies: Vec<f64> = kept.iter().map(|s| s.latency_ms).collect();
        latencies.sort_by(f64::total_cmp);
        let expected: Vec<f64> = (80..100).map(|l| l as f64).collect();
        assert_eq!(latencies, expected);
    }
}
