//! Property test of compaction in the state machine: random keyed produce, tombstones,
//! transactions committed and aborted, DeleteRecords, and rewrites that are read, uploaded
//! and swapped later (so other steps, or another rewrite, may come in between and make the
//! swap lose its race), or never swapped (a crash between upload and swap). The test keeps
//! each stored batch's records beside the coordinator, as the object store would, and
//! compacts the way the shards do. After every step, reading the partition from its start
//! gives offsets that strictly increase and, for every key, the latest committed value the
//! producers wrote at or after the log start (a tombstone's key may be gone once
//! delete.retention.ms has passed); a swap leaves everything at or past its end unchanged;
//! replay and snapshots rebuild the same state.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use proptest::prelude::*;
use shoal_coordinator::state::MergePolicy;
use shoal_coordinator::*;
use uuid::Uuid;

const NOW: i64 = 1_700_000_000_000;
const TXN: &str = "t";

/// One record as stored: its offset and key, and its value (None: a tombstone).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Record {
    offset: i64,
    key: u8,
    value: Option<u16>,
}

/// A stored batch's content, what the object store would hold at its coordinates.
#[derive(Debug, Clone)]
struct Content {
    kind: BatchKind,
    producer_id: i64,
    records: Vec<Record>,
}

#[derive(Debug, Clone)]
enum Op {
    Produce(Vec<(u8, Option<u16>)>),
    /// Into the open transaction (opening one if none is).
    Transactional(Vec<(u8, Option<u16>)>),
    EndTransaction {
        commit: bool,
    },
    DeleteRecords {
        fraction: u8,
    },
    /// Reads and uploads a compaction; its key map covers at most `map_batches` dirty batches.
    StartRewrite {
        map_batches: usize,
    },
    /// Swaps the oldest pending rewrite in (it may lose its race).
    FinishRewrite,
    /// The broker dies between upload and swap: the object is left an orphan.
    Crash,
    Tick,
}

fn records() -> impl Strategy<Value = Vec<(u8, Option<u16>)>> {
    prop::collection::vec((0u8..6, prop::option::weighted(0.8, 0u16..1000)), 1..4)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => records().prop_map(Op::Produce),
        2 => records().prop_map(Op::Transactional),
        1 => any::<bool>().prop_map(|commit| Op::EndTransaction { commit }),
        1 => (0u8..4).prop_map(|fraction| Op::DeleteRecords { fraction }),
        3 => (1usize..6).prop_map(|map_batches| Op::StartRewrite { map_batches }),
        3 => Just(Op::FinishRewrite),
        1 => Just(Op::Crash),
        2 => Just(Op::Tick),
    ]
}

struct Pending {
    command_end: i64,
    partition: TopicPartition,
    object: Option<NewObject>,
    replaced: Vec<BatchCoordinate>,
    batches: Vec<BatchCoordinate>,
    cleaned_offset: i64,
}

struct Model {
    state: CoordinatorState,
    log: Vec<Entry>,
    tp: TopicPartition,
    now: i64,
    objects: usize,
    /// (object key, byte offset) → what is stored there.
    store: HashMap<(Arc<str>, u32), Content>,
    /// Every committed record's value by offset; aborted ones are removed when aborted.
    committed: BTreeMap<i64, (u8, Option<u16>)>,
    /// The open transaction's records, until it ends.
    open: Vec<Record>,
    producer: Option<(i64, i16)>,
    /// The transactional producer's next sequence (a new epoch starts at 0).
    sequence: i32,
    pending: Vec<Pending>,
    delete_retention_ms: i64,
}

impl Model {
    fn new(delete_retention_ms: i64) -> Model {
        let tp = TopicPartition {
            topic_id: Uuid::from_u128(7),
            partition: 0,
        };
        let mut config = TopicConfig {
            cleanup: CleanupPolicy::Compact,
            ..TopicConfig::default()
        };
        config.compaction.min_cleanable_dirty_ratio_ppm = 0;
        config.compaction.delete_retention_ms = delete_retention_ms;
        // The newest 15 ms of batches are Kafka's active segment: not cleanable yet.
        config.compaction.segment_ms = 15;
        let mut m = Model {
            state: CoordinatorState::default(),
            log: Vec::new(),
            tp,
            now: NOW,
            objects: 0,
            store: HashMap::new(),
            committed: BTreeMap::new(),
            open: Vec::new(),
            producer: None,
            sequence: 0,
            pending: Vec::new(),
            delete_retention_ms,
        };
        let entry = m
            .state
            .create_topic("kv", 1, tp.topic_id, config, NOW)
            .unwrap();
        m.apply(vec![entry]);
        m
    }

    fn apply(&mut self, entries: impl IntoIterator<Item = Entry>) {
        for entry in entries {
            self.state.apply(&entry);
            self.log.push(entry);
        }
    }

    /// Commits one batch in a new WAL object; its base offset.
    fn commit(
        &mut self,
        kind: BatchKind,
        producer: (i64, i16),
        records: &[(u8, Option<u16>)],
    ) -> i64 {
        self.objects += 1;
        let key: Arc<str> = Arc::from(format!("wal/{}", self.objects).as_str());
        let batch = CommitBatch {
            partition: self.tp,
            byte_offset: 0,
            size_bytes: 10 * records.len() as u32,
            offset_count: records.len() as u32,
            max_timestamp: self.now,
            producer_id: producer.0,
            producer_epoch: producer.1,
            base_sequence: match kind {
                BatchKind::Transactional => self.sequence,
                _ => -1,
            },
            kind,
            kept_base_offset: None,
            joins_transaction: false,
        };
        let object = NewObject::uploaded(key.to_string(), 100, 0);
        let (results, entry) = self.state.commit_file(&object, &[batch], self.now);
        assert_eq!(results[0].error, None, "{kind:?}");
        if kind == BatchKind::Transactional {
            self.sequence += records.len() as i32;
        }
        self.apply(entry);
        let base = results[0].base_offset;
        let stored: Vec<Record> = records
            .iter()
            .enumerate()
            .map(|(i, (k, v))| Record {
                offset: base + i as i64,
                key: *k,
                value: *v,
            })
            .collect();
        let content = Content {
            kind,
            producer_id: producer.0,
            records: stored.clone(),
        };
        self.store.insert((key, 0), content);
        match kind {
            BatchKind::Plain => {
                for r in &stored {
                    self.committed.insert(r.offset, (r.key, r.value));
                }
            }
            BatchKind::Transactional => self.open.extend(stored),
            _ => {}
        }
        base
    }

    fn run(&mut self, op: Op) {
        self.now += 10;
        match op {
            Op::Produce(records) => {
                self.commit(BatchKind::Plain, (-1, -1), &records);
            }
            Op::Transactional(records) => {
                let producer = match self.producer {
                    Some(p) => p,
                    None => self.begin(),
                };
                self.commit(BatchKind::Transactional, producer, &records);
            }
            Op::EndTransaction { commit } => self.end(commit),
            Op::DeleteRecords { fraction } => {
                let p = self.state.log_start_offset(self.tp).unwrap();
                let hwm = self.state.high_watermark(self.tp).unwrap();
                let target = p + (hwm - p) * fraction as i64 / 4;
                let (_, entry) = self
                    .state
                    .delete_records(self.tp, target, self.now)
                    .unwrap();
                self.apply(entry);
            }
            Op::StartRewrite { map_batches } => self.start_rewrite(map_batches),
            Op::FinishRewrite => self.finish_rewrite(),
            Op::Crash => {
                self.pending.clear();
            }
            Op::Tick => {}
        }
    }

    fn begin(&mut self) -> (i64, i16) {
        let (init, entries) = self
            .state
            .init_transactional(TXN, 60_000, None, self.now)
            .unwrap();
        self.apply(entries);
        let TransactionalInit::Ready {
            producer_id,
            producer_epoch,
        } = init
        else {
            panic!("not ready: {init:?}");
        };
        let entry = self
            .state
            .add_to_transaction(TXN, producer_id, producer_epoch, &[self.tp], self.now)
            .unwrap();
        self.apply(entry);
        self.producer = Some((producer_id, producer_epoch));
        self.sequence = 0;
        (producer_id, producer_epoch)
    }

    fn end(&mut self, commit: bool) {
        let Some(producer) = self.producer.take() else {
            return;
        };
        let (end, entries) = self
            .state
            .end_transaction(TXN, producer.0, producer.1, commit, false, self.now)
            .unwrap();
        self.apply(entries);
        let ending = end.ending.expect("an open transaction ends");
        let marker = if commit {
            BatchKind::CommitMarker
        } else {
            BatchKind::AbortMarker
        };
        self.commit(marker, producer, &[(255, None)]);
        let entries = self.state.complete_transaction(&ending, self.now);
        self.apply(entries);
        for r in std::mem::take(&mut self.open) {
            if commit {
                self.committed.insert(r.offset, (r.key, r.value));
            }
        }
    }

    fn read(&self, from: i64, read_committed: bool) -> FindBatchesResult {
        let request = FindBatchesRequest {
            partition: self.tp,
            offset: from,
            max_partition_bytes: u32::MAX,
            max_batches: u32::MAX,
            read_committed,
        };
        self.state.find_batches(&[request], u32::MAX).remove(0)
    }

    fn content(&self, b: &BatchCoordinate) -> &Content {
        self.store
            .get(&(b.object_key.clone(), b.byte_offset))
            .unwrap_or_else(|| panic!("no stored batch at {b:?}"))
    }

    /// Compacts as the shards do: a key map of the dirty range (at most `map_batches` of its
    /// batches), then the partition rewritten from its first batch to where the map stopped.
    fn start_rewrite(&mut self, map_batches: usize) {
        let merge = MergePolicy {
            min_bytes: u64::MAX,
            max_age_ms: i64::MAX,
            below_bytes: u64::MAX,
        };
        let Some(plan) = self.state.rewrite_plans((0, 1), merge, self.now, 1).pop() else {
            return;
        };
        assert_eq!(plan.kind, RewriteKind::Compact);
        let log_start = self.state.log_start_offset(self.tp).unwrap();
        let read = self.read(plan.from_offset.max(log_start), true);
        let batches: Vec<BatchCoordinate> = read
            .batches
            .into_iter()
            .take_while(|b| b.base_offset < plan.end_offset)
            .collect();
        let is_aborted = |b: &BatchCoordinate, c: &Content| {
            c.kind == BatchKind::Transactional
                && plan.aborted.iter().any(|a| {
                    a.producer_id == c.producer_id
                        && a.first_offset <= b.base_offset
                        && b.base_offset <= a.last_offset
                })
        };
        let mut map: HashMap<u8, i64> = HashMap::new();
        let mut end = plan.end_offset;
        // As the shards read it: from the batch holding the cleaned offset (a log start set
        // inside a batch leaves that batch straddling it, and its records there are dirty).
        let dirty = batches
            .iter()
            .filter(|b| b.last_offset >= plan.cleaned_offset);
        for (mapped, b) in dirty.enumerate() {
            if mapped == map_batches {
                end = b.base_offset;
                break;
            }
            let c = self.content(b);
            if matches!(c.kind, BatchKind::CommitMarker | BatchKind::AbortMarker)
                || is_aborted(b, c)
            {
                continue;
            }
            for r in &c.records {
                map.insert(r.key, r.offset);
            }
        }
        if end <= plan.cleaned_offset {
            return;
        }
        self.objects += 1;
        let key: Arc<str> = Arc::from(format!("wal/rw-{}", self.objects).as_str());
        let tombstones_before = self.now - self.delete_retention_ms;
        let (mut replaced, mut stored) = (Vec::new(), Vec::new());
        for b in batches.iter().filter(|b| b.base_offset < end) {
            let c = self.content(b).clone();
            replaced.push(b.clone());
            let kept = match c.kind {
                BatchKind::CommitMarker | BatchKind::AbortMarker => c.records.clone(),
                _ if is_aborted(b, &c) => Vec::new(),
                _ => c
                    .records
                    .iter()
                    .filter(|r| map.get(&r.key).is_none_or(|latest| *latest <= r.offset))
                    .filter(|r| !(r.value.is_none() && b.log_append_time_ms < tombstones_before))
                    .cloned()
                    .collect(),
            };
            if kept.is_empty() {
                continue;
            }
            let byte_offset = 100 * stored.len() as u32;
            stored.push(BatchCoordinate {
                object_key: key.clone(),
                byte_offset,
                ..b.clone()
            });
            let content = Content { records: kept, ..c };
            self.store.insert((key.clone(), byte_offset), content);
        }
        let object = (!stored.is_empty()).then(|| NewObject::uploaded(key.to_string(), 100, 0));
        self.pending.push(Pending {
            command_end: end,
            partition: self.tp,
            object,
            replaced,
            batches: stored,
            cleaned_offset: end,
        });
    }

    fn finish_rewrite(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let p = self.pending.remove(0);
        let before = self.read(p.command_end, false);
        let (swapped, entry) = self
            .state
            .rewrite_batches(
                p.partition,
                p.object.as_ref(),
                &p.replaced,
                &p.batches,
                Some(p.cleaned_offset),
                self.now,
            )
            .unwrap();
        let lost_object = !swapped && p.object.is_some();
        assert!(
            !lost_object || entry.is_some(),
            "a lost swap leaves its object for collection"
        );
        self.apply(entry);
        if let Some(object) = &p.object {
            assert_eq!(self.state.has_live_batches(&object.key), swapped);
        }
        let after = self.read(p.command_end, false);
        assert_eq!(
            before.batches, after.batches,
            "nothing at or past the end changed"
        );
    }

    fn check(&self) {
        let log_start = self.state.log_start_offset(self.tp).unwrap();
        let read = self.read(log_start, true);
        let mut previous = -1;
        let mut latest: BTreeMap<u8, (i64, Option<u16>)> = BTreeMap::new();
        for b in &read.batches {
            let c = self.content(b);
            let aborted = read.aborted.iter().any(|a| {
                a.producer_id == c.producer_id
                    && a.first_offset <= b.base_offset
                    && b.base_offset <= a.last_offset
            });
            for r in &c.records {
                assert!(r.offset > previous, "offsets strictly increase: {r:?}");
                assert!((b.base_offset..=b.last_offset).contains(&r.offset));
                previous = r.offset;
                let data = matches!(c.kind, BatchKind::Plain | BatchKind::Transactional);
                if data && !aborted && r.offset >= log_start {
                    latest.insert(r.key, (r.offset, r.value));
                }
            }
        }
        // Every live batch is one a reader from the log start reaches: none is left below it
        // (or beside another) by a swap that should have lost its race.
        let live: usize = self.state.stored_batches().values().map(Vec::len).sum();
        assert_eq!(
            live,
            self.read(log_start, false).batches.len(),
            "live batches"
        );
        let lso = read.last_stable_offset;
        let mut expected: BTreeMap<u8, (i64, Option<u16>)> = BTreeMap::new();
        for (offset, (key, value)) in self.committed.range(log_start..lso.max(log_start)) {
            expected.insert(*key, (*offset, *value));
        }
        for (key, want) in &expected {
            match latest.get(key) {
                Some(got) => assert_eq!(got, want, "key {key}"),
                // A tombstone may go once delete.retention.ms has passed.
                None => assert!(want.1.is_none(), "key {key} lost its value {want:?}"),
            }
        }
        for key in latest.keys() {
            assert!(
                expected.contains_key(key),
                "key {key} read but never committed"
            );
        }
    }

    fn assert_replay_and_snapshot_agree(&self) {
        let mut replayed = CoordinatorState::default();
        for entry in &self.log {
            let mut bytes = Vec::new();
            entry.encode(&mut bytes);
            replayed.apply(&Entry::decode(&bytes).unwrap());
        }
        assert_eq!(replayed, self.state);
        let image = self.state.encode_snapshot();
        assert_eq!(
            CoordinatorState::decode_snapshot(&image).unwrap(),
            self.state
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn compaction_keeps_every_keys_latest_value_whatever_comes_between(
        ops in prop::collection::vec(op(), 1..60),
        tombstones_kept in any::<bool>(),
    ) {
        let mut model = Model::new(if tombstones_kept { i64::MAX / 4 } else { 0 });
        for op in ops {
            model.run(op);
            model.check();
        }
        model.assert_replay_and_snapshot_agree();
    }
}

#[test]
fn a_swap_after_delete_records_loses_and_its_object_is_garbage() {
    let mut model = Model::new(0);
    for v in 0..4 {
        model.run(Op::Produce(vec![(1, Some(v))]));
    }
    model.run(Op::Tick);
    model.run(Op::Tick);
    model.run(Op::StartRewrite { map_batches: 10 });
    assert_eq!(model.pending.len(), 1);
    model.run(Op::DeleteRecords { fraction: 2 });
    let key = model.pending[0].object.clone().unwrap().key;
    model.run(Op::FinishRewrite);
    assert!(!model.state.has_live_batches(&key));
    assert!(model
        .state
        .expired_deletable_files(i64::MAX, 100)
        .contains(&key));
    model.check();
    // The next pass starts over and wins.
    model.run(Op::StartRewrite { map_batches: 10 });
    model.run(Op::FinishRewrite);
    let read = model.read(model.state.log_start_offset(model.tp).unwrap(), false);
    let records: usize = read
        .batches
        .iter()
        .map(|b| model.content(b).records.len())
        .sum();
    assert_eq!(records, 1, "only key 1's latest value is left");
    model.check();
    model.assert_replay_and_snapshot_agree();
}
