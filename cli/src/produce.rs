//! `shoal produce TOPIC`: records from standard input, one a line (or one JSON object a
//! line), sent to each partition's leader and acknowledged before the command ends. Input
//! that arrives slowly (typed at a terminal) is sent line by line; input that is waiting
//! (a pipe, a file) goes in batches of up to a MiB.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::time::{SystemTime, UNIX_EPOCH};

use kafka_protocol::protocol::StrBytes;
use serde_json::json;
use shoal_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use shoal_protocol::messages::{ProduceRequest, TopicName};
use shoal_wal::batch::BatchBuilder;
use shoal_wal::decompress::Codec;

use super::partitioner::partition_of;
use super::record_json::RecordToSend;
use super::{check, name_value, print_table, Admin, AdminError, Format, Target};

const PRODUCE_VERSION: i16 = 9;
const TIMEOUT_MS: i32 = 30_000;
/// Records waiting past this many bytes are sent even while more input waits.
const BATCH_BYTES: usize = 1 << 20;
/// The longest line read: a record larger than any broker's default message size.
const LINE_MAX_BYTES: usize = 16 << 20;

#[derive(clap::Args, Debug)]
pub struct ProduceArgs {
    pub topic: String,
    /// Every record's key (default: none).
    #[arg(short, long)]
    key: Option<String>,
    /// Split each line at the first SEPARATOR: the key before it, the value after.
    #[arg(long, value_name = "SEPARATOR")]
    key_separator: Option<String>,
    /// A header on every record, name=value (repeatable).
    #[arg(short = 'H', long = "header", value_parser = name_value)]
    headers: Vec<(String, String)>,
    /// Every record's partition (default: by the key as Kafka's Java producer hashes it;
    /// records without a key take the partitions in turn).
    #[arg(short, long)]
    partition: Option<i32>,
    /// lines: each line a value; json: each line an object as `shoal consume --format json`
    /// prints ({"key", "value", "headers", "partition"}, each optional).
    #[arg(long, value_enum, default_value = "lines")]
    input: Input,
    /// none, gzip, snappy, lz4 or zstd.
    #[arg(long, default_value = "none")]
    compression: String,
    /// all: every in-sync replica has the records; 1: the leader has them.
    #[arg(long, default_value = "all")]
    acks: String,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    Lines,
    Json,
}

/// What was produced to one partition.
#[derive(Default)]
struct Produced {
    records: u64,
    first_offset: Option<i64>,
    last_offset: i64,
}

/// The records read but not sent yet, by partition.
struct Pending {
    records: BTreeMap<i32, Vec<RecordToSend>>,
    bytes: usize,
}

struct Destination {
    topic: String,
    /// Each partition's leader, by partition.
    leaders: BTreeMap<i32, i32>,
    codec: Codec,
    acks: i16,
    /// The next partition for a record without key or partition.
    turn: i32,
}

pub fn run(target: &Target, args: ProduceArgs) -> Result<(), AdminError> {
    let mut admin = target.connect()?;
    let mut destination = Destination {
        topic: args.topic.clone(),
        leaders: admin.leaders(&args.topic)?,
        codec: codec(&args.compression)?,
        acks: match args.acks.as_str() {
            "all" | "-1" => -1,
            "1" => 1,
            other => return Err(usage(format!("--acks {other}: all or 1"))),
        },
        turn: 0,
    };
    let mut produced: BTreeMap<i32, Produced> = BTreeMap::new();
    // What was acknowledged is printed even when the command stops on an error, so a script
    // knows what went out before it.
    let outcome = send_input(&mut admin, &mut destination, &args, &mut produced);
    print_produced(target.format, &args.topic, &produced);
    outcome
}

/// Sends standard input's records until it ends or a line or a send fails.
fn send_input(
    admin: &mut Admin,
    destination: &mut Destination,
    args: &ProduceArgs,
    produced: &mut BTreeMap<i32, Produced>,
) -> Result<(), AdminError> {
    let mut pending = Pending {
        records: BTreeMap::new(),
        bytes: 0,
    };
    let mut input = BufReader::with_capacity(BATCH_BYTES, std::io::stdin().lock());
    let mut line = Vec::new();
    for number in 1.. {
        line.clear();
        let read = Read::take(&mut input, LINE_MAX_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| AdminError::Protocol(format!("standard input: {e}")))?;
        if read == 0 {
            break;
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        let record = match line.len() > LINE_MAX_BYTES {
            true => Err(format!("longer than {LINE_MAX_BYTES} bytes")),
            false => record_of(args, text),
        };
        let record = match record {
            Ok(record) => record,
            Err(why) => {
                // A bad line ends the input: the lines before it are still sent, and the
                // error names the line, so a script knows where to resume.
                destination.send(admin, &mut pending, produced)?;
                return Err(usage(format!("standard input line {number}: {why}")));
            }
        };
        let partition = destination.partition_for(&record, args.partition)?;
        pending.bytes += record.size();
        pending.records.entry(partition).or_default().push(record);
        // Nothing more waiting: send now, so a line typed is a record sent.
        if input.buffer().is_empty() || pending.bytes >= BATCH_BYTES {
            destination.send(admin, &mut pending, produced)?;
        }
    }
    destination.send(admin, &mut pending, produced)
}

fn usage(why: String) -> AdminError {
    AdminError::Protocol(why)
}

fn codec(name: &str) -> Result<Codec, AdminError> {
    Codec::from_name(name).ok_or_else(|| {
        usage(format!(
            "--compression {name}: none, gzip, snappy, lz4 or zstd"
        ))
    })
}

/// The record one input line describes, with the command line's key and headers.
fn record_of(args: &ProduceArgs, line: &[u8]) -> Result<RecordToSend, String> {
    let mut record = match args.input {
        Input::Json => RecordToSend::from_json_line(line)?,
        Input::Lines => {
            let split = args.key_separator.as_ref().and_then(|separator| {
                let at = find(line, separator.as_bytes())?;
                Some((line[..at].to_vec(), line[at + separator.len()..].to_vec()))
            });
            match (split, &args.key_separator) {
                (Some((key, value)), _) => RecordToSend {
                    key: Some(key),
                    value: Some(value),
                    ..RecordToSend::default()
                },
                (None, Some(separator)) => {
                    return Err(format!(
                        "no key separator '{separator}' in {}",
                        String::from_utf8_lossy(line)
                    ))
                }
                (None, None) => RecordToSend {
                    value: Some(line.to_vec()),
                    ..RecordToSend::default()
                },
            }
        }
    };
    if let Some(key) = &args.key {
        record.key = Some(key.clone().into_bytes());
    }
    for (name, value) in &args.headers {
        record
            .headers
            .push((name.clone().into_bytes(), Some(value.clone().into_bytes())));
    }
    Ok(record)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    (!needle.is_empty())
        .then(|| haystack.windows(needle.len()).position(|w| w == needle))
        .flatten()
}

impl Destination {
    fn partition_for(
        &mut self,
        record: &RecordToSend,
        chosen: Option<i32>,
    ) -> Result<i32, AdminError> {
        let count = self.leaders.len() as i32;
        let partition = match (record.partition.or(chosen), &record.key) {
            (Some(p), _) => p,
            (None, Some(key)) => partition_of(key, count),
            (None, None) => {
                let turn = self.turn;
                self.turn = (turn + 1) % count.max(1);
                turn
            }
        };
        match self.leaders.contains_key(&partition) {
            true => Ok(partition),
            false => Err(usage(format!(
                "partition {partition}: {} has {count}",
                self.topic
            ))),
        }
    }

    /// Sends every pending record, a batch a partition, one request a leader.
    fn send(
        &self,
        admin: &mut Admin,
        pending: &mut Pending,
        produced: &mut BTreeMap<i32, Produced>,
    ) -> Result<(), AdminError> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let mut by_leader: BTreeMap<i32, Vec<PartitionProduceData>> = BTreeMap::new();
        let mut counts = BTreeMap::new();
        for (partition, records) in std::mem::take(&mut pending.records) {
            let mut batch = BatchBuilder::new(now);
            for r in &records {
                let headers: Vec<(&[u8], Option<&[u8]>)> = r
                    .headers
                    .iter()
                    .map(|(k, v)| (k.as_slice(), v.as_deref()))
                    .collect();
                batch = batch.record(now, r.key.as_deref(), r.value.as_deref(), &headers);
            }
            let batch = batch
                .build(self.codec)
                .map_err(|e| AdminError::Protocol(format!("encoding a batch: {e}")))?;
            counts.insert(partition, records.len() as u64);
            by_leader.entry(self.leaders[&partition]).or_default().push(
                PartitionProduceData::default()
                    .with_index(partition)
                    .with_records(Some(batch.into())),
            );
        }
        pending.bytes = 0;
        // Every partition's answer is counted before the first refusal is returned.
        let mut refused = None;
        for (leader, partitions) in by_leader {
            let request = ProduceRequest::default()
                .with_acks(self.acks)
                .with_timeout_ms(TIMEOUT_MS)
                .with_topic_data(vec![TopicProduceData::default()
                    .with_name(TopicName(StrBytes::from_string(self.topic.clone())))
                    .with_partition_data(partitions)]);
            let answer = admin.call_node(leader, PRODUCE_VERSION, &request)?;
            for topic in answer.responses {
                for p in topic.partition_responses {
                    let what = format!("{} partition {}", self.topic, p.index);
                    let message = p.error_message.as_ref().map(|m| format!("{what}: {m}"));
                    if let Err(e) = check(p.error_code, Some(message.as_deref().unwrap_or(&what))) {
                        refused.get_or_insert(e);
                        continue;
                    }
                    let count = counts.get(&p.index).copied().unwrap_or(0);
                    let done = produced.entry(p.index).or_default();
                    done.first_offset.get_or_insert(p.base_offset);
                    done.last_offset = p.base_offset + count as i64 - 1;
                    done.records += count;
                }
            }
        }
        refused.map_or(Ok(()), Err)
    }
}

fn print_produced(format: Format, topic: &str, produced: &BTreeMap<i32, Produced>) {
    match format {
        Format::Json => {
            let partitions: Vec<_> = produced
                .iter()
                .map(|(p, d)| {
                    json!({"partition": p, "records": d.records,
                           "first_offset": d.first_offset, "last_offset": d.last_offset})
                })
                .collect();
            println!("{}", json!({"topic": topic, "partitions": partitions}));
        }
        Format::Table => {
            let rows: Vec<Vec<String>> = produced
                .iter()
                .map(|(p, d)| {
                    let first = d.first_offset.map_or("-".into(), |o| o.to_string());
                    vec![
                        p.to_string(),
                        d.records.to_string(),
                        first,
                        d.last_offset.to_string(),
                    ]
                })
                .collect();
            print_table(
                &["PARTITION", "RECORDS", "FIRST OFFSET", "LAST OFFSET"],
                &rows,
            );
        }
    }
}
