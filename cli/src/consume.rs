//! `shoal consume TOPIC`: records from each partition's leader, printed as they come, from a
//! start (earliest, latest, an offset, N before the end, a time, or a group's commits) to the
//! end as it was when the command started, or on with `--follow`. Reads committed records by
//! default, as Kafka's consumers do, leaving out aborted transactions.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use kafka_protocol::protocol::StrBytes;
use serde_json::json;
use shoal_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use shoal_protocol::messages::fetch_response::AbortedTransaction;
use shoal_protocol::messages::{BrokerId, FetchRequest, TopicName};
use shoal_wal::committed::walk_committed;
use shoal_wal::records::{inflate_payload, keyed_records, KeyedRecord};
use shoal_wal::BatchHeader;

use super::datetime::parse_millis;
use super::offsets::{
    commit, committed, list_offsets, EARLIEST, LATEST, READ_COMMITTED, READ_UNCOMMITTED,
};
use super::record_json::bytes_to_json;
use super::{check, Admin, AdminError, Format, Target};
use shoal_registry::wire::schema_id;

const FETCH_VERSION: i16 = 12;
const FETCH_WAIT_MS: i32 = 500;
const PARTITION_MAX_BYTES: i32 = 1 << 20;
const RESPONSE_MAX_BYTES: i32 = 16 << 20;
/// A batch may not inflate past this: a compressed bomb stops here.
const INFLATED_MAX_BYTES: usize = 64 << 20;
/// Rounds without a record while records remain before the end, before giving up.
const STALLED_ROUNDS_MAX: u32 = 60;

#[derive(clap::Args, Debug)]
pub struct ConsumeArgs {
    pub topic: String,
    /// Only this partition (default: every one).
    #[arg(short, long)]
    partition: Option<i32>,
    /// Where to start: earliest, latest, an offset, -N (N records before the end), or @TIME
    /// (milliseconds since the epoch, or YYYY-MM-DDTHH:MM:SS[Z|+HH:MM]).
    #[arg(short, long, default_value = "earliest", allow_hyphen_values = true)]
    offset: String,
    /// Stop after this many records.
    #[arg(short = 'n', long)]
    count: Option<u64>,
    /// At the end, wait for new records instead of stopping (until Ctrl-C or SIGTERM, which
    /// end it cleanly: with --group, what was printed is committed).
    #[arg(short, long)]
    follow: bool,
    /// Start where this group committed (elsewhere --offset) and commit where the command
    /// stopped, as a consumer outside the group: refused while the group has members.
    #[arg(short, long)]
    group: Option<String>,
    /// Also print records of aborted and still open transactions.
    #[arg(long)]
    read_uncommitted: bool,
    /// How table format prints a record: %t topic, %p partition, %o offset, %T timestamp,
    /// %k key, %v value, %h headers (name=value,...), %% a percent sign; \n, \t, \r and \\
    /// as in kcat. Each record ends its line unless the template ends with \n.
    #[arg(long, default_value = "%v")]
    template: String,
}

/// One partition being read.
struct Reading {
    leader: i32,
    position: i64,
    /// Where the command stops reading it (without --follow).
    end: i64,
}

pub fn run(target: &Target, args: ConsumeArgs) -> Result<(), AdminError> {
    let mut admin = target.connect()?;
    let mut leaders = admin.leaders(&args.topic)?;
    leaders.retain(|p, _| args.partition.is_none_or(|only| only == *p));
    if leaders.is_empty() {
        return Err(AdminError::Protocol(format!(
            "{} has no partition {}",
            args.topic,
            args.partition.unwrap_or(0)
        )));
    }
    let isolation = match args.read_uncommitted {
        true => READ_UNCOMMITTED,
        false => READ_COMMITTED,
    };
    let mut reading = positions(&mut admin, &args, &leaders, isolation)?;
    let mut printer = Printer {
        topic: &args.topic,
        format: target.format,
        template: &unescape(&args.template),
        out: std::io::BufWriter::new(std::io::stdout().lock()),
        left: args.count.unwrap_or(u64::MAX),
        reader_gone: false,
    };
    let stop = stop_on_signals()?;
    let mut stalled = 0;
    while printer.left > 0 && !stop.load(Ordering::Relaxed) {
        let wanted: Vec<i32> = reading
            .iter()
            .filter(|(_, r)| args.follow || r.position < r.end)
            .map(|(p, _)| *p)
            .collect();
        if wanted.is_empty() {
            break;
        }
        let moved = fetch_round(
            &mut admin,
            &args.topic,
            &wanted,
            &mut reading,
            isolation,
            &mut printer,
        )?;
        printer.flush().map_err(AdminError::Protocol)?;
        stalled = if moved || args.follow { 0 } else { stalled + 1 };
        if stalled > STALLED_ROUNDS_MAX {
            return Err(AdminError::Protocol(format!(
                "no records came for {} s though the end lies ahead",
                STALLED_ROUNDS_MAX * FETCH_WAIT_MS as u32 / 1000
            )));
        }
    }
    // Whoever read the output stopped (`| head`): end quietly, committing nothing, as what
    // was written may not all have been read.
    if printer.reader_gone {
        return Ok(());
    }
    if let Some(group) = &args.group {
        let coordinator = admin.group_coordinator(group)?;
        let positions = reading
            .iter()
            .map(|(p, r)| ((args.topic.clone(), *p), r.position))
            .collect();
        commit(&mut admin, coordinator, group, &positions)?;
    }
    Ok(())
}

/// Set by Ctrl-C or SIGTERM: the command ends after the fetch in hand (at most
/// FETCH_WAIT_MS), committing for --group what it printed; a second signal ends it at once.
fn stop_on_signals() -> Result<Arc<AtomicBool>, AdminError> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&stop))
            .and_then(|_| signal_hook::flag::register(signal, Arc::clone(&stop)))
            .map_err(|e| AdminError::Protocol(format!("signal handler: {e}")))?;
    }
    Ok(stop)
}

/// Each partition's first offset to read.
fn start_offsets(
    admin: &mut Admin,
    args: &ConsumeArgs,
    keys: &BTreeSet<(String, i32)>,
    ends: &BTreeMap<(String, i32), i64>,
    isolation: i8,
) -> Result<BTreeMap<(String, i32), i64>, AdminError> {
    let earliest = list_offsets(admin, keys, |_| EARLIEST, isolation)?;
    let mut starts = match args.offset.as_str() {
        "earliest" => earliest.clone(),
        "latest" => ends.clone(),
        at if at.starts_with('@') => {
            let text = &at[1..];
            let millis = text
                .parse::<i64>()
                .or_else(|_| parse_millis(text))
                .map_err(AdminError::Protocol)?;
            let found = list_offsets(admin, keys, |_| millis, isolation)?;
            // No record at or after the time: start at the end.
            found
                .into_iter()
                .map(|(k, o)| (k.clone(), if o < 0 { ends[&k] } else { o }))
                .collect()
        }
        number => {
            let n: i64 = number.parse().map_err(|_| {
                AdminError::Protocol(format!(
                    "--offset {number}: earliest, latest, an offset, -N or @TIME"
                ))
            })?;
            keys.iter()
                .map(|k| {
                    let offset = match n < 0 {
                        true => ends[k].saturating_add(n).max(earliest[k]),
                        false => n,
                    };
                    (k.clone(), offset)
                })
                .collect()
        }
    };
    if let Some(group) = &args.group {
        let coordinator = admin.group_coordinator(group)?;
        for (key, offset) in committed(admin, coordinator, group)? {
            if let Some(start) = starts.get_mut(&key) {
                *start = offset;
            }
        }
    }
    Ok(starts)
}

/// One Fetch to each leader of the partitions wanted; whether any position moved.
fn fetch_round(
    admin: &mut Admin,
    topic: &str,
    wanted: &[i32],
    reading: &mut BTreeMap<i32, Reading>,
    isolation: i8,
    printer: &mut Printer<'_>,
) -> Result<bool, AdminError> {
    let mut by_leader: BTreeMap<i32, Vec<FetchPartition>> = BTreeMap::new();
    for p in wanted {
        let r = &reading[p];
        by_leader.entry(r.leader).or_default().push(
            FetchPartition::default()
                .with_partition(*p)
                .with_current_leader_epoch(-1)
                .with_fetch_offset(r.position)
                .with_log_start_offset(-1)
                .with_partition_max_bytes(PARTITION_MAX_BYTES),
        );
    }
    let mut moved = false;
    for (leader, partitions) in by_leader {
        let request = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(FETCH_WAIT_MS)
            .with_min_bytes(1)
            .with_max_bytes(RESPONSE_MAX_BYTES)
            .with_isolation_level(isolation)
            .with_session_id(0)
            .with_session_epoch(-1)
            .with_topics(vec![FetchTopic::default()
                .with_topic(TopicName(StrBytes::from_string(topic.to_string())))
                .with_partitions(partitions)]);
        let answer = admin.call_node(leader, FETCH_VERSION, &request)?;
        check(answer.error_code, Some("fetch"))?;
        for t in answer.responses {
            for p in t.partitions {
                let what = format!("{topic} partition {}", p.partition_index);
                check(p.error_code, Some(&what))?;
                let Some(r) = reading.get_mut(&p.partition_index) else {
                    continue;
                };
                let before = r.position;
                let records = p.records.unwrap_or_default();
                let aborted = p.aborted_transactions.unwrap_or_default();
                r.position =
                    read_batches(p.partition_index, &records, r.position, aborted, printer)
                        .map_err(|e| AdminError::Protocol(format!("{what}: {e}")))?;
                moved |= r.position > before;
                if printer.left == 0 {
                    return Ok(true);
                }
            }
        }
    }
    Ok(moved)
}

/// Prints the records of `records` (whole batches; a batch cut short at the end is left for
/// the next fetch) from `position` on, skipping aborted transactions; the next position.
fn read_batches(
    partition: i32,
    records: &[u8],
    position: i64,
    aborted: Vec<AbortedTransaction>,
    printer: &mut Printer<'_>,
) -> Result<i64, String> {
    let aborted = aborted
        .iter()
        .map(|a| (a.producer_id.0, a.first_offset))
        .collect();
    walk_committed(records, position, aborted, |batch, header| {
        if printer.left == 0 {
            return Ok(Some(header.base_offset));
        }
        // The count running out inside the batch resumes (and commits) there.
        printer.batch(partition, batch, header, position)
    })
}

struct Printer<'a> {
    topic: &'a str,
    format: Format,
    template: &'a str,
    out: std::io::BufWriter<std::io::StdoutLock<'static>>,
    /// Records still to print.
    left: u64,
    /// Standard output's reader closed it: nothing more is printed.
    reader_gone: bool,
}

impl Printer<'_> {
    /// Prints the batch's records at or after `from`, as many as are left to print; the
    /// offset of the first record left unprinted when the count ran out.
    fn batch(
        &mut self,
        partition: i32,
        batch: &[u8],
        header: &BatchHeader,
        from: i64,
    ) -> Result<Option<i64>, String> {
        let inflated =
            inflate_payload(batch, header, INFLATED_MAX_BYTES).map_err(|e| e.to_string())?;
        for record in keyed_records(&inflated, header).map_err(|e| e.to_string())? {
            let offset = header.base_offset + record.offset_delta as i64;
            if offset < from {
                continue;
            }
            if self.left == 0 {
                return Ok(Some(offset));
            }
            let timestamp = match header.is_log_append_time() {
                true => header.max_timestamp,
                false => header.base_timestamp.saturating_add(record.timestamp_delta),
            };
            let line = match self.format {
                Format::Json => {
                    let headers: Vec<_> = record
                        .headers
                        .iter()
                        .map(|(k, v)| json!({"key": bytes_to_json(Some(k)), "value": bytes_to_json(*v)}))
                        .collect();
                    let mut line = json!({"topic": self.topic, "partition": partition,
                           "offset": offset, "timestamp": timestamp,
                           "key": bytes_to_json(record.key),
                           "value": bytes_to_json(record.value), "headers": headers});
                    // Confluent's wire format names the schema a registry serializer used.
                    if let Some(id) = schema_id(record.key) {
                        line["key_schema_id"] = json!(id);
                    }
                    if let Some(id) = schema_id(record.value) {
                        line["value_schema_id"] = json!(id);
                    }
                    line.to_string()
                }
                Format::Table => self.fill(partition, offset, timestamp, &record),
            };
            let end = match self.template.ends_with('\n') && self.format == Format::Table {
                true => "",
                false => "\n",
            };
            if let Err(e) = write!(self.out, "{line}{end}") {
                self.gone_or(e)?;
                return Ok(Some(offset));
            }
            self.left -= 1;
        }
        Ok(None)
    }

    fn flush(&mut self) -> Result<(), String> {
        self.out.flush().or_else(|e| self.gone_or(e))
    }

    /// A closed pipe stops the printing; any other write error is an error.
    fn gone_or(&mut self, e: std::io::Error) -> Result<(), String> {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            return Err(format!("standard output: {e}"));
        }
        self.reader_gone = true;
        self.left = 0;
        Ok(())
    }

    /// The template with the record's fields in place; bytes that are not UTF-8 print as
    /// replacement characters.
    fn fill(&self, partition: i32, offset: i64, timestamp: i64, record: &KeyedRecord) -> String {
        let text =
            |b: Option<&[u8]>| b.map_or(String::new(), |b| String::from_utf8_lossy(b).into_owned());
        let mut out = String::with_capacity(self.template.len() + 64);
        let mut chars = self.template.chars();
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some('t') => out.push_str(self.topic),
                Some('p') => out.push_str(&partition.to_string()),
                Some('o') => out.push_str(&offset.to_string()),
                Some('T') => out.push_str(&timestamp.to_string()),
                Some('k') => out.push_str(&text(record.key)),
                Some('v') => out.push_str(&text(record.value)),
                Some('h') => {
                    let headers: Vec<String> = record
                        .headers
                        .iter()
                        .map(|(k, v)| format!("{}={}", text(Some(k)), text(*v)))
                        .collect();
                    out.push_str(&headers.join(","));
                }
                Some('%') => out.push('%'),
                Some(other) => {
                    out.push('%');
                    out.push(other);
                }
                None => out.push('%'),
            }
        }
        out
    }
}

/// A template's backslash escapes as kcat reads them (\n, \t, \r, \\); any other backslash
/// stays as written.
fn unescape(template: &str) -> String {
    let mut out = String::with_capacity(template.len());
    let mut chars = template.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('\\') => out.push('\\'),
            Some(other) => out.extend(['\\', other]),
            None => out.push('\\'),
        }
    }
    out
}

/// Where each partition's reading starts and ends.
fn positions(
    admin: &mut Admin,
    args: &ConsumeArgs,
    leaders: &BTreeMap<i32, i32>,
    isolation: i8,
) -> Result<BTreeMap<i32, Reading>, AdminError> {
    let keys: BTreeSet<(String, i32)> = leaders.keys().map(|p| (args.topic.clone(), *p)).collect();
    let ends = list_offsets(admin, &keys, |_| LATEST, isolation)?;
    let starts = start_offsets(admin, args, &keys, &ends, isolation)?;
    Ok(leaders
        .iter()
        .map(|(p, leader)| {
            let key = (args.topic.clone(), *p);
            let reading = Reading {
                leader: *leader,
                position: starts[&key],
                end: ends[&key],
            };
            (*p, reading)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::unescape;

    #[test]
    fn templates_take_kcats_escapes_and_leave_other_backslashes() {
        assert_eq!(unescape(r"%k\t%v\n"), "%k\t%v\n");
        assert_eq!(unescape(r"a\\n\r"), "a\\n\r");
        assert_eq!(unescape(r"C:\dir\"), r"C:\dir\");
        assert_eq!(unescape("%v"), "%v");
    }
}
