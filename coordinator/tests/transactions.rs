//! Transactions in the coordinator's state machine: what each operation answers, what
//! read_committed readers see, and that replay and snapshots rebuild the same state.

use shoal_coordinator::state::transactions::TransactionEnding;
use shoal_coordinator::*;
use uuid::Uuid;

const NOW: i64 = 1_700_000_000_000;
const WEEK: i64 = 7 * 24 * 3600 * 1000;

struct Fixture {
    state: CoordinatorState,
    log: Vec<Entry>,
    topic: Uuid,
    objects: usize,
}

impl Fixture {
    fn new() -> Fixture {
        let mut f = Fixture {
            state: CoordinatorState::default(),
            log: Vec::new(),
            topic: Uuid::from_u128(1),
            objects: 0,
        };
        let record = f
            .state
            .create_topic("t", 2, f.topic, TopicConfig::default(), NOW)
            .unwrap();
        f.apply(vec![record]);
        f
    }

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

    fn init(&mut self, id: &str) -> (i64, i16) {
        let (init, records) = self
            .state
            .init_transactional(id, 60_000, None, NOW)
            .unwrap();
        self.apply(records);
        match init {
            TransactionalInit::Ready {
                producer_id,
                producer_epoch,
            } => (producer_id, producer_epoch),
            other => panic!("not ready: {other:?}"),
        }
    }

    fn add(&mut self, id: &str, (pid, epoch): (i64, i16), partitions: &[i32]) {
        let tps: Vec<_> = partitions.iter().map(|p| self.tp(*p)).collect();
        let record = self
            .state
            .add_to_transaction(id, pid, epoch, &tps, NOW)
            .unwrap();
        self.apply(record.into_iter().collect());
    }

    /// Commits one transactional batch of Produce v12+ (transactions V2), which joins its
    /// producer's transaction; its answer.
    fn commit_joining(
        &mut self,
        partition: i32,
        holder: (i64, i16),
        base_sequence: i32,
    ) -> CommitBatchResult {
        let batch = CommitBatch {
            joins_transaction: true,
            ..self.batch(
                partition,
                BatchKind::Transactional,
                holder,
                base_sequence,
                1,
            )
        };
        self.commit_batch(batch)
    }

    /// EndTxn v5 (transactions V2): the end's answer.
    fn end_v2(
        &mut self,
        id: &str,
        holder: (i64, i16),
        commit: bool,
    ) -> Result<TransactionEnd, ErrorKind> {
        let (end, records) = self
            .state
            .end_transaction(id, holder.0, holder.1, commit, true, NOW)?;
        self.apply(records);
        Ok(end)
    }

    /// Commits one batch of `count` records; its answer.
    fn commit(
        &mut self,
        partition: i32,
        kind: BatchKind,
        holder: (i64, i16),
        base_sequence: i32,
        count: u32,
    ) -> CommitBatchResult {
        let batch = self.batch(partition, kind, holder, base_sequence, count);
        self.commit_batch(batch)
    }

    fn commit_batch(&mut self, batch: CommitBatch) -> CommitBatchResult {
        self.objects += 1;
        let object = NewObject::uploaded(format!("wal/{}", self.objects), 100, 0);
        let (results, record) = self.state.commit_file(&object, &[batch], NOW);
        self.apply(record.into_iter().collect());
        results[0]
    }

    fn batch(
        &self,
        partition: i32,
        kind: BatchKind,
        (pid, epoch): (i64, i16),
        base_sequence: i32,
        count: u32,
    ) -> CommitBatch {
        CommitBatch {
            partition: self.tp(partition),
            byte_offset: 0,
            size_bytes: 100,
            offset_count: count,
            max_timestamp: NOW,
            producer_id: pid,
            producer_epoch: epoch,
            base_sequence,
            kind,
            kept_base_offset: None,
            joins_transaction: false,
        }
    }

    fn end(&mut self, id: &str, holder: (i64, i16), commit: bool) -> TransactionEnding {
        let (end, records) = self
            .state
            .end_transaction(id, holder.0, holder.1, commit, false, NOW)
            .unwrap();
        self.apply(records);
        end.ending.expect("an open transaction ends")
    }

    /// Writes the markers as the broker does, then completes.
    fn finish(&mut self, ending: &TransactionEnding) {
        let kind = if ending.commit {
            BatchKind::CommitMarker
        } else {
            BatchKind::AbortMarker
        };
        for tp in ending.partitions.clone() {
            let holder = (ending.producer_id, ending.producer_epoch);
            let result = self.commit(tp.partition, kind, holder, -1, 1);
            assert_eq!(result.error, None);
        }
        let records = self.state.complete_transaction(ending, NOW);
        self.apply(records);
    }

    fn read_committed(&self, partition: i32) -> FindBatchesResult {
        let request = FindBatchesRequest {
            partition: self.tp(partition),
            offset: 0,
            max_partition_bytes: u32::MAX,
            max_batches: u32::MAX,
            read_committed: true,
        };
        self.state.find_batches(&[request], u32::MAX).remove(0)
    }

    fn assert_replay_and_snapshot_agree(&self) {
        let mut replayed = CoordinatorState::default();
        for r in &self.log {
            let mut entry = Vec::new();
            r.encode(&mut entry);
            replayed.apply(&Entry::decode(&entry).unwrap());
        }
        assert_eq!(replayed, self.state);
        let image = self.state.encode_snapshot();
        assert_eq!(
            CoordinatorState::decode_snapshot(&image).unwrap(),
            self.state
        );
    }
}

#[test]
fn open_transactions_hold_the_last_stable_offset_and_aborted_ones_are_listed() {
    let mut f = Fixture::new();
    let a = f.init("a");
    f.add("a", a, &[0, 1]);
    assert_eq!(
        f.commit(0, BatchKind::Plain, (-1, -1), -1, 2).base_offset,
        0
    );
    assert_eq!(
        f.commit(0, BatchKind::Transactional, a, 0, 3).base_offset,
        2
    );
    assert_eq!(
        f.commit(0, BatchKind::Plain, (-1, -1), -1, 1).base_offset,
        5
    );
    let open = f.read_committed(0);
    assert_eq!((open.last_stable_offset, open.high_watermark), (2, 6));
    assert_eq!(
        open.batches.len(),
        1,
        "only the batch below the last stable offset"
    );
    // ListOffsets "latest" for read_committed is the last stable offset.
    let latest = f.state.list_offsets(f.tp(0), LATEST_TIMESTAMP, true);
    assert_eq!(latest.offset, 2);
    f.assert_replay_and_snapshot_agree();

    let ending = f.end("a", a, false);
    assert_eq!(ending.partitions, vec![f.tp(0), f.tp(1)]);
    f.finish(&ending);
    let done = f.read_committed(0);
    assert_eq!((done.last_stable_offset, done.high_watermark), (7, 7));
    assert_eq!(done.batches.len(), 4);
    assert_eq!(
        done.aborted,
        vec![AbortedTransaction {
            producer_id: a.0,
            first_offset: 2,
            last_offset: 6
        }]
    );
    // Partition 1 got a marker but no records: nothing aborted there.
    assert!(f.read_committed(1).aborted.is_empty());
    assert_eq!(
        f.state.transaction("a").unwrap().status,
        TransactionStatus::CompleteAbort
    );
    f.assert_replay_and_snapshot_agree();
}

#[test]
fn batches_outside_an_open_transaction_and_stale_markers_are_refused() {
    let mut f = Fixture::new();
    let a = f.init("a");
    // Not added to the transaction yet, and no transaction open.
    let refused = f.commit(0, BatchKind::Transactional, a, 0, 1);
    assert_eq!(refused.error, Some(ErrorKind::InvalidTxnState));
    f.add("a", a, &[0]);
    assert_eq!(
        f.commit(1, BatchKind::Transactional, a, 0, 1).error,
        Some(ErrorKind::InvalidTxnState)
    );
    assert_eq!(f.commit(0, BatchKind::Transactional, a, 0, 1).error, None);
    // A marker while the transaction is open, or of the other outcome, is refused.
    assert_eq!(
        f.commit(0, BatchKind::CommitMarker, a, -1, 1).error,
        Some(ErrorKind::InvalidTxnState)
    );
    let ending = f.end("a", a, true);
    assert_eq!(
        f.commit(0, BatchKind::AbortMarker, a, -1, 1).error,
        Some(ErrorKind::InvalidTxnState)
    );
    f.finish(&ending);
    // The same ending again (a second finisher) changes nothing.
    assert_eq!(
        f.commit(0, BatchKind::CommitMarker, a, -1, 1).error,
        Some(ErrorKind::InvalidTxnState)
    );
    assert!(f.state.complete_transaction(&ending, NOW).is_empty());
    let read = f.read_committed(0);
    assert_eq!(read.last_stable_offset, read.high_watermark);
    assert!(read.aborted.is_empty());
}

#[test]
fn a_new_producer_fences_the_old_one_and_aborts_its_open_transaction() {
    let mut f = Fixture::new();
    let old = f.init("a");
    f.add("a", old, &[0]);
    f.commit(0, BatchKind::Transactional, old, 0, 2);
    let (init, records) = f.state.init_transactional("a", 60_000, None, NOW).unwrap();
    f.apply(records);
    let TransactionalInit::MustEnd(ending) = init else {
        panic!("the open transaction must end first: {init:?}");
    };
    assert!(!ending.commit);
    assert_eq!(ending.producer_epoch, old.1 + 1);
    // The fenced producer can neither write nor end its transaction.
    assert_eq!(
        f.commit(0, BatchKind::Transactional, old, 2, 1).error,
        Some(ErrorKind::InvalidProducerEpoch)
    );
    let refused = f.state.end_transaction("a", old.0, old.1, true, false, NOW);
    assert_eq!(refused.unwrap_err(), ErrorKind::ProducerFenced);
    f.finish(&ending);
    let new = f.init("a");
    assert_eq!(new, (old.0, old.1 + 2));
    assert_eq!(f.read_committed(0).aborted.len(), 1);
    f.assert_replay_and_snapshot_agree();
}

#[test]
fn timed_out_transactions_are_aborted_at_a_new_epoch_and_offsets_wait_for_the_commit() {
    let mut f = Fixture::new();
    let a = f.init("a");
    f.add("a", a, &[0]);
    let entry = OffsetCommitEntry {
        partition: f.tp(1),
        offset: 42,
        leader_epoch: -1,
        metadata: String::new(),
    };
    let (results, record) = f
        .state
        .add_transaction_offsets("a", a.0, a.1, "g", &[entry], false, NOW)
        .unwrap();
    assert_eq!(results, vec![None]);
    f.apply(record.into_iter().collect());
    assert!(
        f.state.fetch_offsets("g", None).is_empty(),
        "not before the commit"
    );
    // Not yet timed out; then past the timeout.
    assert!(f
        .state
        .transactions_to_end(NOW + 59_999, 10, WEEK)
        .0
        .is_empty());
    let (endings, records) = f.state.transactions_to_end(NOW + 60_000, 10, WEEK);
    f.apply(records);
    assert_eq!(endings.len(), 1);
    assert_eq!(endings[0].producer_epoch, a.1 + 1);
    // Still ending until its markers are in: asked again while its writer has it, it is
    // left to that writer; once that has taken too long, it is returned again.
    assert!(f
        .state
        .transactions_to_end(NOW + 60_001, 10, WEEK)
        .0
        .is_empty());
    let takeover = NOW + 60_000 + shoal_coordinator::state::transactions::ENDING_TAKEOVER_MS;
    assert_eq!(f.state.transactions_to_end(takeover, 10, WEEK).0, endings);
    f.finish(&endings[0]);
    assert!(
        f.state.fetch_offsets("g", None).is_empty(),
        "aborted offsets are dropped"
    );
    let refused = f.state.end_transaction("a", a.0, a.1, true, false, NOW);
    assert_eq!(refused.unwrap_err(), ErrorKind::ProducerFenced);

    // A committed transaction hands its offsets to the group.
    let b = f.init("a");
    f.add("a", b, &[]);
    let (_, record) = f
        .state
        .add_transaction_offsets("a", b.0, b.1, "g", &[entry_at(&f, 7)], false, NOW)
        .unwrap();
    f.apply(record.into_iter().collect());
    let ending = f.end("a", b, true);
    f.finish(&ending);
    let offsets = f.state.fetch_offsets("g", None);
    assert_eq!(offsets.len(), 1);
    assert_eq!(offsets[0].1.as_ref().unwrap().offset, 7);
    f.assert_replay_and_snapshot_agree();
}

#[test]
fn idle_transactional_ids_expire_but_not_while_a_transaction_is_open() {
    let mut f = Fixture::new();
    let a = f.init("a");
    let b = f.init("b");
    f.add("b", b, &[0]);
    // "b" is open: past its timeout it is aborted, not forgotten; "a" idles a week.
    let (endings, records) = f.state.transactions_to_end(NOW + WEEK, 10, WEEK);
    let expired = shoal_protocol::records::ShoalTransactionsExpiredRecord {
        transactional_ids: vec!["a".into()],
    };
    assert_eq!(records[0], Entry::of(NOW + WEEK, expired));
    f.apply(records);
    assert!(f.state.transaction("a").is_none());
    assert_eq!(endings.len(), 1);
    f.finish(&endings[0]);
    // A forgotten id starts again with a new producer id; the old one maps to nothing.
    let again = f.init("a");
    assert_ne!(again.0, a.0);
    assert_eq!(
        f.commit(0, BatchKind::Transactional, a, 0, 1).error,
        Some(ErrorKind::InvalidProducerIdMapping)
    );
    f.assert_replay_and_snapshot_agree();
}

#[test]
fn timeouts_outside_kafkas_bounds_are_refused() {
    let f = Fixture::new();
    for timeout in [0, -1, 900_001] {
        let refused = f
            .state
            .init_transactional("a", timeout, None, NOW)
            .unwrap_err();
        assert_eq!(refused, ErrorKind::InvalidTransactionTimeout);
    }
}

fn entry_at(f: &Fixture, offset: i64) -> OffsetCommitEntry {
    OffsetCommitEntry {
        partition: f.tp(1),
        offset,
        leader_epoch: -1,
        metadata: String::new(),
    }
}

#[test]
fn transactions_v2_join_by_writing_bump_the_epoch_at_each_end_and_move_on_when_it_runs_out() {
    let mut f = Fixture::new();
    let (pid, _) = f.init("a");
    // A producer far along its epochs, as a restart would find it.
    let worn = shoal_protocol::records::ShoalTransactionRecord {
        transactional_id: "a".into(),
        producer_id: pid,
        producer_epoch: i16::MAX - 1,
        timeout_ms: 60_000,
        state: 0,
        started_ms: -1,
        updated_ms: NOW,
        partitions: Vec::new(),
        pending_offsets: Vec::new(),
        ended_producer_id: -1,
        ended_producer_epoch: -1,
        next_producer_id: -1,
    };
    f.apply(vec![Entry::of(NOW, worn)]);
    let old = (pid, i16::MAX - 1);
    // The write joins: no AddPartitionsToTxn.
    assert_eq!(f.commit_joining(0, old, 0).error, None);
    assert_eq!(
        f.state.transaction("a").unwrap().status,
        TransactionStatus::Ongoing
    );
    // Its end moves the producer to a new id at epoch 0, once the markers (at the last epoch
    // of the old id) are in.
    let end = f.end_v2("a", old, true).unwrap();
    let ending = end.ending.clone().unwrap();
    assert_eq!((ending.producer_id, ending.producer_epoch), (pid, i16::MAX));
    let new = (end.producer_id, end.producer_epoch);
    assert!(new.0 != pid && new.1 == 0, "{new:?}");
    f.finish(&ending);
    let t = f.state.transaction("a").unwrap();
    assert_eq!(
        (t.producer_id, t.producer_epoch, t.status),
        (new.0, 0, TransactionStatus::CompleteCommit)
    );
    // A retry of that EndTxn (its answer lost) gets the same answer, and writes nothing.
    let (retried, records) = f
        .state
        .end_transaction("a", old.0, old.1, true, true, NOW)
        .unwrap();
    assert!(records.is_empty() && retried.ending.is_none());
    assert_eq!((retried.producer_id, retried.producer_epoch), new);
    // A late write of the ended transaction cannot begin another.
    assert!(f.commit_joining(1, old, 1).error.is_some());
    assert_eq!(f.read_committed(1).high_watermark, 0);

    // The next transaction, on the new producer; a late write after it is refused too.
    assert_eq!(f.commit_joining(1, new, 0).error, None);
    let end = f.end_v2("a", new, false).unwrap();
    f.finish(&end.ending.clone().unwrap());
    let next = (end.producer_id, end.producer_epoch);
    assert_eq!(next, (new.0, 1));
    assert_eq!(
        f.commit_joining(1, new, 1).error,
        Some(ErrorKind::InvalidProducerEpoch)
    );
    assert_eq!(f.read_committed(1).aborted.len(), 1);

    // Nothing open: an abort still moves the epoch on; a commit is refused.
    let end = f.end_v2("a", next, false).unwrap();
    assert!(end.ending.is_none());
    assert_eq!((end.producer_id, end.producer_epoch), (new.0, 2));
    let after = (new.0, 2);
    assert_eq!(
        f.end_v2("a", after, true).unwrap_err(),
        ErrorKind::InvalidTxnState
    );
    // The fenced epoch is refused everywhere.
    assert_eq!(
        f.end_v2("a", new, true).unwrap_err(),
        ErrorKind::ProducerFenced
    );

    // TxnOffsetCommit v5 joins as a write does, and its offsets reach the group at the commit.
    let (results, record) = f
        .state
        .add_transaction_offsets("a", after.0, after.1, "g", &[entry_at(&f, 9)], true, NOW)
        .unwrap();
    assert_eq!(results, vec![None]);
    f.apply(record.into_iter().collect());
    let again =
        f.state
            .add_transaction_offsets("a", after.0, after.1, "g", &[entry_at(&f, 9)], false, NOW);
    assert!(
        again.is_ok(),
        "open now, so a commit that does not join is taken too"
    );
    let end = f.end_v2("a", after, true).unwrap();
    f.finish(&end.ending.unwrap());
    assert_eq!(
        f.state.fetch_offsets("g", None)[0]
            .1
            .as_ref()
            .unwrap()
            .offset,
        9
    );
    f.assert_replay_and_snapshot_agree();
}

#[test]
fn an_operators_abort_ends_the_whole_transaction_once_and_fences_its_producer() {
    let mut f = Fixture::new();
    let a = f.init("a");
    f.add("a", a, &[0, 1]);
    assert_eq!(f.commit(0, BatchKind::Transactional, a, 0, 2).error, None);
    assert_eq!(f.commit(1, BatchKind::Transactional, a, 0, 1).error, None);
    // A partition the transaction did not write to: nothing to abort.
    let elsewhere = TopicPartition {
        topic_id: Uuid::from_u128(99),
        partition: 0,
    };
    assert_eq!(
        f.state.abort_transaction_in(a.0, a.1, elsewhere, NOW),
        Ok((None, None))
    );
    // An older epoch cannot end it.
    let older = f.state.abort_transaction_in(a.0, a.1 - 1, f.tp(0), NOW);
    assert_eq!(older, Err(ErrorKind::InvalidProducerEpoch));
    let (ending, record) = f
        .state
        .abort_transaction_in(a.0, a.1, f.tp(0), NOW)
        .unwrap();
    f.apply(record.into_iter().collect());
    let ending = ending.expect("open in partition 0: aborted");
    assert!(!ending.commit);
    assert_eq!(
        ending.partitions,
        vec![f.tp(0), f.tp(1)],
        "the whole transaction"
    );
    assert_eq!(ending.producer_epoch, a.1 + 1, "its producer fenced");
    f.finish(&ending);
    // The marker's other partition, asked next with the same epoch: nothing open there now.
    assert_eq!(
        f.state.abort_transaction_in(a.0, a.1, f.tp(1), NOW),
        Ok((None, None))
    );
    assert_eq!(f.read_committed(1).aborted.len(), 1);
    assert_eq!(
        f.state
            .end_transaction("a", a.0, a.1, true, false, NOW)
            .unwrap_err(),
        ErrorKind::ProducerFenced
    );
    f.assert_replay_and_snapshot_agree();
}
