//! A model test of transactions: random sequences of InitProducerId, AddPartitionsToTxn,
//! transactional and plain writes, EndTxn (with its markers), timeouts and snapshots on two
//! transactional ids and two partitions, each id's producer on transactions V1 or V2 (KIP-890:
//! writes join the transaction, the epoch moves on at every end, so a late write of an ended
//! transaction is refused and a retried EndTxn is answered as the end it repeats). After every
//! step, what a read_committed consumer would see (the batches below the last stable offset,
//! less the aborted transactions' records and the markers, as a client filters them) must be
//! exactly the model's plain and committed records; at the end replay and a snapshot rebuild
//! the same state.

use std::collections::{BTreeSet, HashMap};

use proptest::prelude::*;
use shoal_coordinator::state::transactions::TransactionEnding;
use shoal_coordinator::*;
use uuid::Uuid;

const IDS: [&str; 2] = ["a", "b"];
const TIMEOUT_MS: i32 = 1000;

#[derive(Debug, Clone)]
enum Op {
    Init(usize),
    Add(usize, Vec<i32>),
    Write(usize, i32, u32),
    Plain(i32, u32),
    End(usize, bool),
    /// A write of the id's producer at the epoch it held before its last V2 end.
    LateWrite(usize, i32),
    /// The clock passes every open transaction's timeout.
    Timeout,
    Snapshot,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => (0..2usize).prop_map(Op::Init),
        2 => (0..2usize, prop::collection::vec(0..2i32, 0..3)).prop_map(|(i, p)| Op::Add(i, p)),
        3 => (0..2usize, 0..2i32, 1..4u32).prop_map(|(i, p, n)| Op::Write(i, p, n)),
        1 => (0..2i32, 1..3u32).prop_map(|(p, n)| Op::Plain(p, n)),
        2 => (0..2usize, any::<bool>()).prop_map(|(i, c)| Op::End(i, c)),
        1 => (0..2usize, 0..2i32).prop_map(|(i, p)| Op::LateWrite(i, p)),
        1 => Just(Op::Timeout),
        1 => Just(Op::Snapshot),
    ]
}

/// Who wrote each offset of a partition, as the model knows it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Written {
    Plain,
    /// (transactional id index, transaction number)
    Transactional(usize, u32),
    Marker,
}

#[derive(Default)]
struct Model {
    /// Per id: (producer id, epoch) once initialised.
    holders: [Option<(i64, i16)>; 2],
    /// Per id: whether its producer runs transactions V2.
    v2: [bool; 2],
    /// Per id: what it held before its last V2 end.
    before_end: [Option<(i64, i16)>; 2],
    /// Per id: the open transaction's number and partitions.
    open: [Option<(u32, BTreeSet<i32>)>; 2],
    next_transaction: u32,
    committed: BTreeSet<(usize, u32)>,
    /// Per partition: the writer of each offset.
    offsets: [Vec<Written>; 2],
}

struct Harness {
    state: CoordinatorState,
    log: Vec<Entry>,
    topic: Uuid,
    objects: usize,
    now: i64,
    /// The next sequence of each (producer id, epoch, partition).
    sequences: HashMap<(i64, i16, i32), i32>,
}

impl Harness {
    fn apply(&mut self, records: Vec<Entry>) {
        for r in records {
            self.state.apply(&r);
            self.log.push(r);
        }
    }

    fn tp(&self, partition: i32) -> TopicPartition {
        TopicPartition {
            topic_id: self.topic,
            partition,
        }
    }

    fn commit(
        &mut self,
        partition: i32,
        kind: BatchKind,
        holder: (i64, i16),
        count: u32,
    ) -> CommitBatchResult {
        self.commit_joining(partition, kind, holder, count, false)
    }

    fn commit_joining(
        &mut self,
        partition: i32,
        kind: BatchKind,
        holder: (i64, i16),
        count: u32,
        joins_transaction: bool,
    ) -> CommitBatchResult {
        self.objects += 1;
        let batch = CommitBatch {
            partition: self.tp(partition),
            byte_offset: 0,
            size_bytes: 10,
            offset_count: count,
            max_timestamp: self.now,
            producer_id: holder.0,
            producer_epoch: holder.1,
            base_sequence: match kind {
                BatchKind::Transactional => *self
                    .sequences
                    .get(&(holder.0, holder.1, partition))
                    .unwrap_or(&0),
                _ => -1,
            },
            kind,
            kept_base_offset: None,
            joins_transaction,
        };
        let object = NewObject::uploaded(format!("wal/{}", self.objects), 10, 0);
        let (results, record) = self.state.commit_file(&object, &[batch], self.now);
        self.apply(record.into_iter().collect());
        if kind == BatchKind::Transactional && results[0].error.is_none() {
            *self
                .sequences
                .entry((holder.0, holder.1, partition))
                .or_insert(0) += count as i32;
        }
        results[0]
    }

    fn finish(&mut self, ending: &TransactionEnding, model: &mut Model) {
        let kind = if ending.commit {
            BatchKind::CommitMarker
        } else {
            BatchKind::AbortMarker
        };
        for tp in &ending.partitions {
            let holder = (ending.producer_id, ending.producer_epoch);
            let result = self.commit(tp.partition, kind, holder, 1);
            assert_eq!(result.error, None, "marker refused");
            model.offsets[tp.partition as usize].push(Written::Marker);
        }
        let records = self.state.complete_transaction(ending, self.now);
        self.apply(records);
    }

    /// The (partition, offset) pairs a read_committed client would deliver.
    fn visible(&self, model: &Model) -> BTreeSet<(i32, i64)> {
        let mut seen = BTreeSet::new();
        for partition in 0..2 {
            let request = FindBatchesRequest {
                partition: self.tp(partition),
                offset: 0,
                max_partition_bytes: u32::MAX,
                max_batches: u32::MAX,
                read_committed: true,
            };
            let found = self.state.find_batches(&[request], u32::MAX).remove(0);
            let writers = &model.offsets[partition as usize];
            for b in &found.batches {
                for offset in b.base_offset..=b.last_offset {
                    let writer = writers[offset as usize];
                    let aborted = found.aborted.iter().any(|a| {
                        a.first_offset <= offset
                            && offset <= a.last_offset
                            && matches!(writer, Written::Transactional(id, _)
                                if model.holders[id].is_some_and(|h| h.0 == a.producer_id))
                    });
                    if writer != Written::Marker && !aborted {
                        seen.insert((partition, offset));
                    }
                }
            }
        }
        seen
    }
}

impl Model {
    /// Plain records and committed transactions' records below each partition's first open
    /// transactional record.
    fn expected(&self) -> BTreeSet<(i32, i64)> {
        let mut expected = BTreeSet::new();
        for partition in 0..2 {
            let writers = &self.offsets[partition];
            let stable = writers
                .iter()
                .position(|w| {
                    matches!(w, Written::Transactional(id, n)
                    if self.open[*id].as_ref().is_some_and(|(open, _)| open == n))
                })
                .unwrap_or(writers.len());
            for (offset, w) in writers.iter().enumerate().take(stable) {
                let shown = match w {
                    Written::Plain => true,
                    Written::Transactional(id, n) => self.committed.contains(&(*id, *n)),
                    Written::Marker => false,
                };
                if shown {
                    expected.insert((partition as i32, offset as i64));
                }
            }
        }
        expected
    }

    fn ended(&mut self, id: usize, commit: bool) {
        if let Some((n, _)) = self.open[id].take() {
            if commit {
                self.committed.insert((id, n));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn read_committed_sees_exactly_the_committed_records(ops in prop::collection::vec(op(), 1..60), v2 in any::<[bool; 2]>()) {
        let topic = Uuid::from_u128(1);
        let mut h = Harness { state: CoordinatorState::default(), log: Vec::new(), topic, objects: 0, now: 1_000_000, sequences: HashMap::new() };
        let record = h.state.create_topic("t", 2, topic, TopicConfig::default(), h.now).unwrap();
        h.apply(vec![record]);
        let mut model = Model { v2, ..Model::default() };
        for op in ops {
            h.now += 1;
            match op {
                Op::Init(id) => {
                    let (init, records) = h.state.init_transactional(IDS[id], TIMEOUT_MS, None, h.now).unwrap();
                    h.apply(records);
                    let init = match init {
                        TransactionalInit::MustEnd(ending) => {
                            prop_assert!(model.open[id].is_some() && !ending.commit);
                            h.finish(&ending, &mut model);
                            model.ended(id, false);
                            let (init, records) = h.state.init_transactional(IDS[id], TIMEOUT_MS, None, h.now).unwrap();
                            h.apply(records);
                            init
                        }
                        ready => {
                            prop_assert!(model.open[id].is_none());
                            ready
                        }
                    };
                    let TransactionalInit::Ready { producer_id, producer_epoch } = init else {
                        panic!("ready after the open transaction ended: {init:?}");
                    };
                    if let Some((pid, epoch)) = model.holders[id] {
                        prop_assert!(producer_id != pid || producer_epoch > epoch, "a new epoch fences");
                    }
                    model.holders[id] = Some((producer_id, producer_epoch));
                }
                Op::Add(id, partitions) => {
                    let Some(holder) = model.holders[id] else { continue };
                    if model.v2[id] {
                        continue; // a V2 producer's writes join by themselves
                    }
                    let tps: Vec<_> = partitions.iter().map(|p| h.tp(*p)).collect();
                    let record = h.state.add_to_transaction(IDS[id], holder.0, holder.1, &tps, h.now).unwrap();
                    h.apply(record.into_iter().collect());
                    let open = model.open[id].get_or_insert_with(|| {
                        model.next_transaction += 1;
                        (model.next_transaction, BTreeSet::new())
                    });
                    open.1.extend(partitions);
                }
                Op::Write(id, partition, count) => {
                    let Some(holder) = model.holders[id] else { continue };
                    let result = h.commit_joining(partition, BatchKind::Transactional, holder, count, model.v2[id]);
                    if model.v2[id] {
                        let open = model.open[id].get_or_insert_with(|| {
                            model.next_transaction += 1;
                            (model.next_transaction, BTreeSet::new())
                        });
                        open.1.insert(partition);
                    }
                    match &model.open[id] {
                        Some((n, added)) if added.contains(&partition) => {
                            prop_assert_eq!(result.error, None);
                            for _ in 0..count {
                                model.offsets[partition as usize].push(Written::Transactional(id, *n));
                            }
                        }
                        _ => prop_assert_eq!(result.error, Some(ErrorKind::InvalidTxnState)),
                    }
                }
                Op::LateWrite(id, partition) => {
                    let Some(before) = model.before_end[id] else { continue };
                    let result = h.commit_joining(partition, BatchKind::Transactional, before, 1, true);
                    prop_assert_eq!(result.error, Some(ErrorKind::InvalidProducerEpoch));
                }
                Op::Plain(partition, count) => {
                    let result = h.commit(partition, BatchKind::Plain, (-1, -1), count);
                    prop_assert_eq!(result.error, None);
                    for _ in 0..count {
                        model.offsets[partition as usize].push(Written::Plain);
                    }
                }
                Op::End(id, commit) => {
                    let Some(holder) = model.holders[id] else { continue };
                    let v2 = model.v2[id];
                    let end = h.state.end_transaction(IDS[id], holder.0, holder.1, commit, v2, h.now);
                    match end {
                        Ok((end, records)) => {
                            h.apply(records);
                            match &end.ending {
                                Some(ending) => {
                                    prop_assert!(model.open[id].is_some());
                                    h.finish(ending, &mut model);
                                    model.ended(id, commit);
                                }
                                // V2 aborts with nothing open, moving the epoch on all the same.
                                None => prop_assert!(model.open[id].is_none() && (!v2 || !commit)),
                            }
                            if v2 {
                                prop_assert_eq!((end.producer_id, end.producer_epoch), (holder.0, holder.1 + 1));
                                model.holders[id] = Some((end.producer_id, end.producer_epoch));
                                model.before_end[id] = Some(holder);
                                // Its answer lost, the producer asks again: the same end.
                                let (retried, records) = h.state.end_transaction(IDS[id], holder.0, holder.1, commit, true, h.now).unwrap();
                                prop_assert!(records.is_empty());
                                prop_assert_eq!((retried.ending, retried.producer_id, retried.producer_epoch), (None, end.producer_id, end.producer_epoch));
                            }
                        }
                        Err(ErrorKind::InvalidTxnState) => prop_assert!(model.open[id].is_none() && (!v2 || commit)),
                        Err(e) => prop_assert!(false, "EndTxn refused: {e:?}"),
                    }
                }
                Op::Timeout => {
                    let (endings, records) = h.state.transactions_to_end(h.now + TIMEOUT_MS as i64, 10, i64::MAX);
                    h.apply(records);
                    let open: BTreeSet<usize> = (0..2).filter(|i| model.open[*i].is_some()).collect();
                    let ended: BTreeSet<usize> = endings
                        .iter()
                        .map(|e| IDS.iter().position(|id| *id == e.transactional_id).unwrap())
                        .collect();
                    prop_assert_eq!(&ended, &open);
                    for ending in endings {
                        let id = IDS.iter().position(|i| *i == ending.transactional_id).unwrap();
                        h.finish(&ending, &mut model);
                        model.ended(id, false);
                        // Fenced: the old holder's epoch is gone.
                        let old = model.holders[id].unwrap();
                        let refused = h.state.add_to_transaction(IDS[id], old.0, old.1, &[], h.now);
                        prop_assert_eq!(refused, Err(ErrorKind::ProducerFenced));
                        model.holders[id] = Some((old.0, ending.producer_epoch));
                    }
                }
                Op::Snapshot => {
                    let image = h.state.encode_snapshot();
                    prop_assert_eq!(&CoordinatorState::decode_snapshot(&image).unwrap(), &h.state);
                }
            }
            prop_assert_eq!(h.visible(&model), model.expected());
        }
        let mut replayed = CoordinatorState::default();
        for r in &h.log {
            let mut entry = Vec::new();
            r.encode(&mut entry);
            replayed.apply(&Entry::decode(&entry).unwrap());
        }
        prop_assert_eq!(&replayed, &h.state);
        let image = h.state.encode_snapshot();
        prop_assert_eq!(&CoordinatorState::decode_snapshot(&image).unwrap(), &h.state);
    }
}
