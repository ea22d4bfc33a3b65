//! shoal-bench: a Kafka-protocol load generator. It speaks the protocol itself, so it drives
//! Shoal or any Kafka-compatible broker, and reports throughput and hdrhistogram latencies as a
//! live line per second, a summary, and a JSON file with the workload and the machine.

mod batch;
mod consume;
mod kafka;
mod produce;
mod secure;
mod stats;
mod tcp_baseline;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use serde_json::json;

use consume::ConsumeOptions;
use produce::{ProduceOptions, StopOnDrop};
use stats::LiveStats;

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("cannot connect to {0}")]
    Connect(String),
    #[error("I/O: {0}")]
    Io(std::io::Error),
    #[error("protocol: {0}")]
    Protocol(String),
    #[error("usage: {0}")]
    Usage(String),
    #[error("a worker thread panicked")]
    Thread,
}

#[derive(Parser)]
#[command(
    version,
    about = "Kafka-protocol load generator for Shoal and Kafka-compatible brokers"
)]
struct Cli {
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Subcommand)]
enum Mode {
    /// Produce records; reports produce latency (send or scheduled time to acknowledgement).
    Produce(ProduceArgs),
    /// Consume records from the beginning (catch-up) or the end (tailing).
    Consume(ConsumeArgs),
    /// Produce and consume at once; reports produce and end-to-end latency.
    E2e(ProduceArgs),
    /// Loopback TCP throughput with no broker: the network baseline.
    TcpBaseline(BaselineArgs),
}

#[derive(Args, Clone)]
struct Common {
    #[arg(long, short, default_value = "127.0.0.1:9092")]
    bootstrap: String,
    #[arg(long, default_value = "shoal-bench")]
    topic: String,
    /// The client.id sent; `shoal_az=<rack>` keeps a Shoal cluster's Metadata on that zone.
    #[arg(long, default_value = "shoal-bench")]
    client_id: String,
    #[arg(long, default_value_t = 8)]
    partitions: i32,
    /// Create the topic first (an existing one is fine).
    #[arg(long)]
    create: bool,
    #[arg(long, default_value_t = 10.0)]
    duration_s: f64,
    /// CPUs to pin the generator's threads to, e.g. "1" or "2,3"; empty leaves them unpinned.
    #[arg(long, value_delimiter = ',')]
    cpus: Vec<usize>,
    /// Write the results (workload, machine, broker config, results) here as JSON.
    #[arg(long)]
    output: Option<PathBuf>,
    /// The broker's config file, copied into the JSON for the record.
    #[arg(long)]
    broker_config: Option<PathBuf>,
    /// A label for the run.
    #[arg(long, default_value = "")]
    label: String,
    /// The broker's metrics endpoint (host:port); a scrape is saved beside the JSON output.
    #[arg(long)]
    metrics: Option<String>,
    #[command(flatten)]
    security: secure::Security,
}

#[derive(Args, Clone)]
struct ProduceArgs {
    #[command(flatten)]
    common: Common,
    #[arg(long, default_value_t = 1024)]
    message_bytes: usize,
    #[arg(long, default_value_t = 100)]
    records_per_batch: usize,
    #[arg(long, default_value_t = 4)]
    connections: usize,
    /// 0, 1 or -1 (all).
    #[arg(long, default_value_t = -1, allow_hyphen_values = true)]
    acks: i16,
    #[arg(long, default_value = "none")]
    compression: String,
    /// Target records/s for all connections together (open loop); 0 = as fast as possible.
    #[arg(long, default_value_t = 0.0)]
    rate: f64,
    /// Requests in flight per connection.
    #[arg(long, default_value_t = 8)]
    max_in_flight: usize,
    /// Start every value with Confluent's wire-format prefix for this schema id (magic byte
    /// 0, the id in 4 bytes), as a schema registry serializer writes it.
    #[arg(long)]
    schema_id: Option<i32>,
}

#[derive(Args, Clone)]
struct ConsumeArgs {
    #[command(flatten)]
    common: Common,
    /// Start at the end of each partition (tailing) instead of the beginning (catch-up).
    #[arg(long)]
    from_end: bool,
    /// Stop after this many records.
    #[arg(long)]
    records: Option<u64>,
    #[arg(long, default_value_t = 500)]
    max_wait_ms: i32,
    #[arg(long, default_value_t = 52_428_800)]
    fetch_max_bytes: i32,
    #[arg(long, default_value_t = 1_048_576)]
    partition_max_bytes: i32,
}

#[derive(Args, Clone)]
struct BaselineArgs {
    #[arg(long, default_value_t = 4)]
    connections: usize,
    #[arg(long, default_value_t = 5.0)]
    duration_s: f64,
    #[arg(long, value_delimiter = ',')]
    cpus: Vec<usize>,
    #[arg(long)]
    output: Option<PathBuf>,
}

/// Pins the calling thread to `cpus[slot % len]`; no-op without CPUs.
pub fn pin(cpus: &[usize], slot: usize) {
    if cpus.is_empty() {
        return;
    }
    let id = cpus[slot % cpus.len()];
    core_affinity::set_for_current(core_affinity::CoreId { id });
}

fn machine() -> serde_json::Value {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    json!({
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "kernel": kernel.trim(),
    })
}

fn produce_options(a: &ProduceArgs) -> ProduceOptions {
    ProduceOptions {
        bootstrap: a.common.bootstrap.clone(),
        security: a.common.security.clone(),
        topic: a.common.topic.clone(),
        partitions: a.common.partitions,
        message_bytes: a.message_bytes,
        records_per_batch: a.records_per_batch,
        connections: a.connections,
        acks: a.acks,
        compression: a.compression.clone(),
        duration: Duration::from_secs_f64(a.common.duration_s),
        rate: (a.rate > 0.0).then_some(a.rate),
        max_in_flight: a.max_in_flight.max(1),
        cpus: a.common.cpus.clone(),
        schema_id: a.schema_id,
    }
}

fn produce_workload(a: &ProduceArgs, mode: &str) -> serde_json::Value {
    json!({
        "mode": mode, "label": a.common.label, "bootstrap": a.common.bootstrap,
        "security_protocol": a.common.security.security_protocol,
        "topic": a.common.topic, "partitions": a.common.partitions,
        "message_bytes": a.message_bytes, "records_per_batch": a.records_per_batch,
        "connections": a.connections, "acks": a.acks, "compression": a.compression,
        "rate_records_per_s": if a.rate > 0.0 { json!(a.rate) } else { json!("max (closed loop)") },
        "max_in_flight_per_connection": a.max_in_flight, "schema_id": a.schema_id,
        "duration_s": a.common.duration_s, "generator_cpus": a.common.cpus,
    })
}

/// The slowest requests, in the order they were due: `[seconds since the start, ms]`.
fn slowest_json(slowest: &[produce::Slow]) -> serde_json::Value {
    let round = |x: f64| (x * 1000.0).round() / 1000.0;
    slowest
        .iter()
        .map(|s| json!([round(s.due_s), round(s.latency_ms)]))
        .collect()
}

fn throughput(records: u64, bytes: u64, elapsed: Duration) -> serde_json::Value {
    let s = elapsed.as_secs_f64().max(1e-9);
    json!({
        "records": records, "bytes": bytes, "seconds": (s * 1000.0).round() / 1000.0,
        "records_per_s": (records as f64 / s).round(),
        "mb_per_s": (bytes as f64 / s / 1e6 * 100.0).round() / 100.0,
    })
}

fn finish(
    common: &Common,
    workload: serde_json::Value,
    results: serde_json::Value,
) -> Result<(), BenchError> {
    let broker_config = common
        .broker_config
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok());
    let report = json!({
        "tool": "shoal-bench", "workload": workload, "machine": machine(),
        "broker_config": broker_config, "results": results,
    });
    print_summary(&report["results"]);
    if let Some(path) = &common.output {
        std::fs::write(
            path,
            serde_json::to_string_pretty(&report).unwrap_or_default(),
        )
        .map_err(BenchError::Io)?;
        eprintln!("wrote {}", path.display());
        if let Some(metrics) = &common.metrics {
            let scrape = scrape_metrics(metrics)?;
            let scrape_path = path.with_extension("metrics.txt");
            std::fs::write(&scrape_path, scrape).map_err(BenchError::Io)?;
            eprintln!("wrote {}", scrape_path.display());
        }
    }
    Ok(())
}

/// The human summary: one line per measured flow, one per latency distribution.
fn print_summary(results: &serde_json::Value) {
    for flow in ["produce", "consume"] {
        let r = &results[flow];
        if r.is_object() {
            println!(
                "{flow:<8} {:>12} records  {:>10} rec/s  {:>9} MB/s  over {} s",
                r["records"], r["records_per_s"], r["mb_per_s"], r["seconds"]
            );
        }
    }
    for (key, name) in [
        ("produce_latency_ms", "produce latency"),
        ("end_to_end_latency_ms", "end-to-end latency"),
    ] {
        let l = &results[key];
        if l.is_object() {
            println!(
                "{name:<19} p50 {} ms  p90 {} ms  p99 {} ms  p99.9 {} ms  max {} ms",
                l["p50"], l["p90"], l["p99"], l["p999"], l["max"]
            );
        }
    }
    if let Some(errors) = results["produce_errors"].as_u64().filter(|e| *e > 0) {
        println!(
            "produce errors: {errors} (last Kafka error code {})",
            results["last_error_code"]
        );
    }
}

/// GET /metrics over plain HTTP/1.1.
fn scrape_metrics(address: &str) -> Result<String, BenchError> {
    use std::io::{Read, Write};
    let mut stream = kafka::tcp_connect(address)?;
    write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )
    .map_err(BenchError::Io)?;
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .map_err(BenchError::Io)?;
    match response.split_once("\r\n\r\n") {
        Some((head, body)) if head.starts_with("HTTP/1.1 200") => Ok(body.to_string()),
        _ => Err(BenchError::Protocol(format!(
            "metrics scrape from {address} failed"
        ))),
    }
}

/// Creates the topic if asked, then checks the broker and the topic before any load.
fn prepare(common: &Common) -> Result<(), BenchError> {
    common.security.check()?;
    kafka::set_client_id(&common.client_id);
    if common.create {
        kafka::create_topic(
            &common.bootstrap,
            &common.security,
            &common.topic,
            common.partitions,
        )?;
    }
    kafka::check_broker(
        &common.bootstrap,
        &common.security,
        &common.topic,
        common.partitions,
    )
}

fn run() -> Result<(), BenchError> {
    match Cli::parse().mode {
        Mode::Produce(a) => run_produce(&a),
        Mode::E2e(a) => run_e2e(&a),
        Mode::Consume(a) => run_consume(&a),
        Mode::TcpBaseline(a) => run_tcp_baseline(&a),
    }
}

/// `produce`: records at the given rate (or as fast as acknowledged), with their latency.
fn run_produce(a: &ProduceArgs) -> Result<(), BenchError> {
    prepare(&a.common)?;
    let stats = Arc::new(LiveStats::default());
    let stop = Arc::new(AtomicBool::new(false));
    stats::progress("produce", stats.clone(), stop.clone());
    let _stop = StopOnDrop(stop);
    let r = produce::run(&produce_options(a), stats)?;
    let results = json!({
        "produce": throughput(r.records, r.bytes, r.elapsed),
        "produce_errors": r.errors,
        "last_error_code": r.last_error_code,
        "produce_latency_ms": stats::percentiles(&r.latency_us),
        "slowest_requests": slowest_json(&r.slowest),
    });
    finish(&a.common, produce_workload(a, "produce"), results)
}

/// `e2e`: a consumer tailing what the producer writes, for end-to-end latency.
fn run_e2e(a: &ProduceArgs) -> Result<(), BenchError> {
    prepare(&a.common)?;
    let consume_opts = ConsumeOptions {
        bootstrap: a.common.bootstrap.clone(),
        security: a.common.security.clone(),
        topic: a.common.topic.clone(),
        partitions: a.common.partitions,
        from_end: true,
        // Keep reading a little after the producer stops, for the last batches.
        duration: Duration::from_secs_f64(a.common.duration_s + 2.0),
        records: None,
        max_wait_ms: 500,
        fetch_max_bytes: 52_428_800,
        partition_max_bytes: 1_048_576,
        cpus: a.common.cpus.iter().rev().copied().collect(),
    };
    let consume_stats = Arc::new(LiveStats::default());
    let consume_stop = Arc::new(AtomicBool::new(false));
    let consumer = {
        let stats = consume_stats.clone();
        let stop = consume_stop.clone();
        std::thread::spawn(move || consume::run(&consume_opts, stats, stop))
    };
    // Let the consumer find the end before records flow.
    std::thread::sleep(Duration::from_millis(300));
    let stats = Arc::new(LiveStats::default());
    let stop = Arc::new(AtomicBool::new(false));
    stats::progress("e2e produce", stats.clone(), stop.clone());
    let produced = produce::run(&produce_options(a), stats)?;
    drop(StopOnDrop(stop));
    // Stop once everything produced has been read, or at the consumer's deadline.
    while consume_stats
        .records
        .load(std::sync::atomic::Ordering::Relaxed)
        < produced.records
        && !consumer.is_finished()
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    consume_stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let consumed = consumer.join().map_err(|_| BenchError::Thread)??;
    let results = json!({
        "produce": throughput(produced.records, produced.bytes, produced.elapsed),
        "produce_errors": produced.errors,
        "last_error_code": produced.last_error_code,
        "produce_latency_ms": stats::percentiles(&produced.latency_us),
        "consume": throughput(consumed.records, consumed.bytes, consumed.elapsed),
        "end_to_end_latency_ms": stats::percentiles(&consumed.end_to_end_us),
    });
    finish(&a.common, produce_workload(a, "e2e"), results)
}

/// `consume`: catch-up or tailing reads.
fn run_consume(a: &ConsumeArgs) -> Result<(), BenchError> {
    prepare(&a.common)?;
    let opts = ConsumeOptions {
        bootstrap: a.common.bootstrap.clone(),
        security: a.common.security.clone(),
        topic: a.common.topic.clone(),
        partitions: a.common.partitions,
        from_end: a.from_end,
        duration: Duration::from_secs_f64(a.common.duration_s),
        records: a.records,
        max_wait_ms: a.max_wait_ms,
        fetch_max_bytes: a.fetch_max_bytes,
        partition_max_bytes: a.partition_max_bytes,
        cpus: a.common.cpus.clone(),
    };
    let stats = Arc::new(LiveStats::default());
    let stop = Arc::new(AtomicBool::new(false));
    stats::progress("consume", stats.clone(), stop.clone());
    let _stop = StopOnDrop(stop.clone());
    let r = consume::run(&opts, stats, Arc::new(AtomicBool::new(false)))?;
    let workload = json!({
        "mode": "consume", "label": a.common.label, "topic": a.common.topic,
        "partitions": a.common.partitions, "from": if a.from_end { "end" } else { "beginning" },
        "max_wait_ms": a.max_wait_ms, "fetch_max_bytes": a.fetch_max_bytes,
        "partition_max_bytes": a.partition_max_bytes, "duration_s": a.common.duration_s,
        "generator_cpus": a.common.cpus,
    });
    let results = json!({
        "consume": throughput(r.records, r.bytes, r.elapsed),
        "end_to_end_latency_ms": stats::percentiles(&r.end_to_end_us),
    });
    finish(&a.common, workload, results)
}

/// `tcp-baseline`: what the loopback carries with no broker, the ceiling for the others.
fn run_tcp_baseline(a: &BaselineArgs) -> Result<(), BenchError> {
    let (bytes, elapsed) = tcp_baseline::run(
        a.connections,
        Duration::from_secs_f64(a.duration_s),
        &a.cpus,
    )?;
    let results = json!({ "tcp_loopback": throughput(0, bytes, elapsed) });
    let report = json!({
        "tool": "shoal-bench", "machine": machine(),
        "workload": {"mode": "tcp-baseline", "connections": a.connections,
                     "write_bytes": 1 << 20, "duration_s": a.duration_s, "cpus": a.cpus},
        "results": results,
    });
    println!(
        "{}",
        serde_json::to_string_pretty(&results).unwrap_or_default()
    );
    if let Some(path) = &a.output {
        std::fs::write(
            path,
            serde_json::to_string_pretty(&report).unwrap_or_default(),
        )
        .map_err(BenchError::Io)?;
    }
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("shoal-bench: {e}");
        std::process::exit(1);
    }
}
