//! The same commands, in the same rounds, on the local log and on PostgreSQL with several
//! rounds in flight: every answer agrees (offsets, duplicates, sequence errors, deleted
//! records, what reads see), and each back end's log rebuilds its live state exactly,
//! snapshots included.

use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use shoal_coordinator::commands::*;
use shoal_coordinator::*;
use shoal_metalog::postgres_log::WriterRole;
use shoal_metalog::*;
use shoal_pg::testing::{TestPostgres, PASSWORD};
use shoal_pg::{Connection, PgConfig};
use uuid::Uuid;

mod support;
use support::{create_topic, open_postgres, run, view};

const PRODUCER_ID: i64 = 5;

#[derive(Clone, Debug)]
enum Op {
    /// A file with one batch of `records` for `partition`, idempotent when `sequence` is set
    /// (an offset from the partition's next expected sequence: 0 next, -1 a retry, 2 a gap).
    Commit {
        partition: i32,
        records: i32,
        sequence: Option<i32>,
    },
    DeleteRecords {
        partition: i32,
        before: i64,
    },
    Find {
        partition: i32,
        offset: i64,
    },
    Latest {
        partition: i32,
    },
    /// Ends the current round.
    Break,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0..3i32, 1..5i32, prop::option::of(prop_oneof![Just(0), Just(-1), Just(2)]))
            .prop_map(|(partition, records, sequence)| Op::Commit { partition, records, sequence }),
        1 => (0..3i32, 0..30i64).prop_map(|(partition, before)| Op::DeleteRecords { partition, before }),
        1 => (0..3i32, 0..30i64).prop_map(|(partition, offset)| Op::Find { partition, offset }),
        1 => (0..3i32).prop_map(|partition| Op::Latest { partition }),
        3 => Just(Op::Break),
    ]
}

/// Turns ops into rounds of commands, choosing sequences by what the model expects next.
fn rounds(topic: Uuid, ops: &[Op]) -> Vec<Vec<(usize, Envelope)>> {
    let mut next_sequence = [0i32; 3];
    let mut rounds = vec![Vec::new()];
    for (index, op) in ops.iter().enumerate() {
        let tp = |partition: i32| TopicPartition {
            topic_id: topic,
            partition,
        };
        let command = match *op {
            Op::Break => {
                rounds.push(Vec::new());
                continue;
            }
            Op::Commit {
                partition,
                records,
                sequence,
            } => {
                let expected = &mut next_sequence[partition as usize];
                let base_sequence = match sequence {
                    Some(delta) => (*expected + delta).max(0),
                    None => -1,
                };
                if sequence == Some(0) {
                    *expected += records;
                }
                let batch = CommitBatch {
                    partition: tp(partition),
                    byte_offset: 0,
                    size_bytes: 100,
                    offset_count: records as u32,
                    max_timestamp: 1000 + index as i64,
                    producer_id: if sequence.is_some() { PRODUCER_ID } else { -1 },
                    producer_epoch: if sequence.is_some() { 0 } else { -1 },
                    base_sequence,
                    kind: shoal_coordinator::BatchKind::Plain,
                    kept_base_offset: None,
                    joins_transaction: false,
                };
                Envelope::new(CommitFile {
                    object: NewObject::uploaded(format!("wal/{index}"), 100, 0),
                    batches: vec![batch],
                })
            }
            Op::DeleteRecords { partition, before } => Envelope::new(DeleteRecords {
                partitions: vec![(tp(partition), before)],
            }),
            Op::Find { partition, offset } => Envelope::new(FindBatches {
                partitions: vec![FindBatchesRequest {
                    read_committed: false,
                    partition: tp(partition),
                    offset,
                    max_partition_bytes: u32::MAX,
                    max_batches: u32::MAX,
                }],
                max_bytes: u32::MAX,
            }),
            Op::Latest { partition } => Envelope::new(ListOffsets {
                read_committed: false,
                partitions: vec![(tp(partition), -1)],
            }),
        };
        rounds.last_mut().unwrap().push((index, command));
    }
    rounds.retain(|round| !round.is_empty());
    rounds
}

/// What an answer says, without the times each back end stamped on its own.
fn summary(op: &Op, reply: AnyReply) -> String {
    match op {
        Op::Commit { .. } => {
            let results = reply.into_reply::<CommitFile>().unwrap();
            let parts: Vec<_> = results
                .iter()
                .map(|r| (r.error, r.base_offset, r.log_start_offset, r.is_duplicate))
                .collect();
            format!("{parts:?}")
        }
        Op::DeleteRecords { .. } => format!("{:?}", reply.into_reply::<DeleteRecords>().unwrap()),
        Op::Find { .. } => {
            let found = reply.into_reply::<FindBatches>().unwrap();
            let parts: Vec<_> = found
                .iter()
                .map(|f| {
                    let batches: Vec<_> = f
                        .batches
                        .iter()
                        .map(|b| (b.object_key.to_string(), b.base_offset, b.last_offset))
                        .collect();
                    (f.error, f.log_start_offset, f.high_watermark, batches)
                })
                .collect();
            format!("{parts:?}")
        }
        Op::Latest { .. } => format!("{:?}", reply.into_reply::<ListOffsets>().unwrap()),
        Op::Break => unreachable!("a break is no command"),
    }
}

/// One case: answers from both back ends, and whether each rebuilt its state exactly.
/// Returns the most rounds PostgreSQL had in flight at once.
async fn one_case(
    database: PgConfig,
    ops: Vec<Op>,
    snapshot_log_bytes: u64,
) -> Result<usize, TestCaseError> {
    let dir = std::env::temp_dir().join(format!("shoal-agree-{}", Uuid::new_v4()));
    let mut local = CoordinatorCore::open(&dir, view(), snapshot_log_bytes)
        .await
        .unwrap();
    let mut postgres = open_postgres(&database, "a", WriterRole::Sole, snapshot_log_bytes)
        .await
        .unwrap();
    // Topic ids are random: each back end gets the same commands for its own topic.
    let local_topic = create_topic(&mut local).await;
    let postgres_topic = create_topic(&mut postgres).await;

    let mut local_answers = Vec::new();
    for round in rounds(local_topic, &ops) {
        let slots: Vec<usize> = round.iter().map(|(slot, _)| *slot).collect();
        let replies = local
            .process(round.into_iter().map(|(_, c)| c).collect())
            .await;
        local_answers.extend(slots.into_iter().zip(replies.unwrap()));
    }
    let mut pipeline = RoundPipeline::default();
    let mut postgres_answers = Vec::new();
    let mut most_in_flight = 0;
    for round in rounds(postgres_topic, &ops) {
        while !pipeline.accepts(&postgres) {
            postgres_answers.extend(pipeline.next_answers(&mut postgres).await.unwrap());
        }
        postgres_answers.extend(pipeline.submit(&mut postgres, round).await.unwrap());
        most_in_flight = most_in_flight.max(pipeline.in_flight());
    }
    postgres_answers.extend(pipeline.drain(&mut postgres).await.unwrap());
    prop_assert!(most_in_flight <= postgres.appends_in_flight());

    postgres_answers.sort_by_key(|(slot, _)| *slot);
    local_answers.sort_by_key(|(slot, _)| *slot);
    prop_assert_eq!(postgres_answers.len(), local_answers.len());
    for ((slot, from_postgres), (_, from_local)) in postgres_answers.into_iter().zip(local_answers)
    {
        let op = &ops[slot];
        prop_assert_eq!(
            summary(op, from_postgres),
            summary(op, from_local),
            "op {} {:?}",
            slot,
            op
        );
    }

    let (live_local, live_postgres) = (local.state().clone(), postgres.state().clone());
    drop((local, postgres));
    let reopened = CoordinatorCore::open(&dir, view(), u64::MAX).await.unwrap();
    prop_assert_eq!(reopened.state(), &live_local);
    let reopened = open_postgres(&database, "a", WriterRole::Sole, u64::MAX)
        .await
        .unwrap();
    prop_assert_eq!(reopened.state(), &live_postgres);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(most_in_flight)
}

#[test]
fn both_back_ends_answer_alike_and_recover_exactly_with_rounds_in_flight() {
    let server = TestPostgres::start();
    let base = PgConfig::from_url(&server.url(), Some(PASSWORD.into())).unwrap();
    let config = Config {
        cases: 24,
        max_shrink_iters: 200,
        ..Config::default()
    };
    let strategy = (
        prop::collection::vec(op(), 1..60),
        prop_oneof![Just(u64::MAX), Just(600u64)],
    );
    let cases = AtomicUsize::new(0);
    let most_in_flight = AtomicUsize::new(0);
    TestRunner::new(config)
        .run(&strategy, |(ops, snapshot_log_bytes)| {
            // Every case (shrunk ones too) on a fresh database, in an executor of its own.
            let mut database = base.clone();
            database.database = format!("agree_{}", cases.fetch_add(1, Ordering::Relaxed));
            database.pool_size = 3;
            let admin = base.clone();
            let (outcome, receiver) = std::sync::mpsc::channel();
            run(move || async move {
                let mut connection = Connection::connect(&admin).await.unwrap();
                let create = format!("CREATE DATABASE {}", database.database);
                connection.batch_execute(&create).await.unwrap();
                outcome
                    .send(one_case(database, ops, snapshot_log_bytes).await)
                    .unwrap();
            });
            let in_flight = receiver.recv().unwrap()?;
            most_in_flight.fetch_max(in_flight, Ordering::Relaxed);
            Ok(())
        })
        .unwrap();
    assert!(
        most_in_flight.into_inner() > 1,
        "some cases must have had rounds in flight together"
    );
}
