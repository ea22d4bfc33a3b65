//! Property test: random operation sequences against a simple model of offsets, plus the
//! promise that replaying the produced records rebuilds an identical state.

use proptest::prelude::*;
use shoal_coordinator::records::Record;
use shoal_coordinator::*;
use uuid::Uuid;

#[derive(Debug, Clone)]
enum Op {
    Create {
        topic: u8,
        partitions: i32,
    },
    Delete {
        topic: u8,
    },
    Commit {
        batches: Vec<(u8, i32, u32, u32)>,
    },
    Find {
        topic: u8,
        partition: i32,
        offset: i64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u8..3, 1i32..4).prop_map(|(topic, partitions)| Op::Create { topic, partitions }),
        (0u8..3).prop_map(|topic| Op::Delete { topic }),
        prop::collection::vec((0u8..3, 0i32..4, 1u32..5, 1u32..200), 1..6)
            .prop_map(|batches| Op::Commit { batches }),
        (0u8..3, 0i32..4, 0i64..30).prop_map(|(topic, partition, offset)| Op::Find {
            topic,
            partition,
            offset
        }),
    ]
}

/// Per partition, the committed batches as (base offset, count, size).
type ModelPartitions = Vec<Vec<(i64, u32, u32)>>;

/// The model: per topic number, its id and partitions.
#[derive(Default)]
struct Model {
    topics: std::collections::HashMap<u8, (Uuid, ModelPartitions)>,
}

proptest! {
    #[test]
    fn offsets_match_the_model_and_replay_is_exact(ops in prop::collection::vec(op(), 1..60)) {
        let mut state = CoordinatorState::default();
        let mut model = Model::default();
        let mut log: Vec<Record> = Vec::new();
        for (step, op) in ops.into_iter().enumerate() {
            match op {
                Op::Create { topic, partitions } => {
                    let id = Uuid::from_u128(step as u128 + 1);
                    let result = state.create_topic(&format!("t{topic}"), partitions, id);
                    prop_assert_eq!(result.is_ok(), !model.topics.contains_key(&topic));
                    if let Ok(record) = result {
                        state.apply(&record);
                        log.push(record);
                        model.topics.insert(topic, (id, vec![Vec::new(); partitions as usize]));
                    }
                }
                Op::Delete { topic } => {
                    let result = state.delete_topic(&format!("t{topic}"));
                    prop_assert_eq!(result.is_ok(), model.topics.contains_key(&topic));
                    if let Ok(record) = result {
                        state.apply(&record);
                        log.push(record);
                        model.topics.remove(&topic);
                    }
                }
                Op::Commit { batches } => {
                    let mut commit = Vec::new();
                    let mut byte_offset = 0;
                    for (topic, partition, count, size) in &batches {
                        let topic_id = model.topics.get(topic).map(|t| t.0).unwrap_or(Uuid::from_u128(999));
                        commit.push(CommitBatch {
                            partition: TopicPartition { topic_id, partition: *partition },
                            byte_offset,
                            size_bytes: *size,
                            offset_count: *count,
                            max_timestamp: step as i64,
                            producer_id: -1,
                            producer_epoch: -1,
                            base_sequence: -1,
                            is_transactional: false,
                        });
                        byte_offset += size;
                    }
                    let (results, record) = state.commit_file("wal/x", &commit, 0);
                    for ((topic, partition, count, size), result) in batches.iter().zip(&results) {
                        let known = model.topics.get_mut(topic).and_then(|t| t.1.get_mut(*partition as usize));
                        match known {
                            Some(p) => {
                                let expected = p.last().map(|(b, c, _)| b + *c as i64).unwrap_or(0);
                                prop_assert_eq!(result.error, None);
                                prop_assert_eq!(result.base_offset, expected);
                                p.push((expected, *count, *size));
                            }
                            None => prop_assert_eq!(result.error, Some(ErrorKind::UnknownTopicOrPartition)),
                        }
                    }
                    state.apply(&record);
                    log.push(record);
                }
                Op::Find { topic, partition, offset } => {
                    let topic_id = model.topics.get(&topic).map(|t| t.0).unwrap_or(Uuid::from_u128(999));
                    let request = FindBatchesRequest {
                        partition: TopicPartition { topic_id, partition },
                        offset,
                        max_partition_bytes: u32::MAX,
                    };
                    let found = &state.find_batches(&[request], u32::MAX)[0];
                    match model.topics.get(&topic).and_then(|t| t.1.get(partition as usize)) {
                        None => prop_assert_eq!(found.error, Some(ErrorKind::UnknownTopicOrPartition)),
                        Some(p) => {
                            let hwm = p.last().map(|(b, c, _)| b + *c as i64).unwrap_or(0);
                            prop_assert_eq!(found.high_watermark, hwm);
                            if offset > hwm {
                                prop_assert_eq!(found.error, Some(ErrorKind::OffsetOutOfRange));
                            } else {
                                let expected: Vec<(i64, i64)> = p.iter()
                                    .filter(|(b, c, _)| b + *c as i64 > offset)
                                    .map(|(b, c, _)| (*b, b + *c as i64 - 1))
                                    .collect();
                                let got: Vec<(i64, i64)> = found.batches.iter().map(|b| (b.base_offset, b.last_offset)).collect();
                                prop_assert_eq!(got, expected);
                            }
                        }
                    }
                }
            }
        }
        let mut replayed = CoordinatorState::default();
        for record in &log {
            replayed.apply(record);
        }
        prop_assert_eq!(replayed, state);
    }
}

#[test]
fn find_batches_spends_one_budget_and_lets_only_the_first_batch_overshoot() {
    let mut state = CoordinatorState::default();
    let id = Uuid::from_u128(1);
    state.apply(&state.create_topic("t", 2, id).unwrap());
    let batch = |partition, size| CommitBatch {
        partition: TopicPartition {
            topic_id: id,
            partition,
        },
        byte_offset: 0,
        size_bytes: size,
        offset_count: 1,
        max_timestamp: 0,
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
        is_transactional: false,
    };
    let (_, record) = state.commit_file("wal/a", &[batch(0, 100), batch(0, 100), batch(1, 100)], 0);
    state.apply(&record);
    let req = |partition| FindBatchesRequest {
        partition: TopicPartition {
            topic_id: id,
            partition,
        },
        offset: 0,
        max_partition_bytes: 1000,
    };
    let found = state.find_batches(&[req(0), req(1)], 50);
    assert_eq!(found[0].batches.len(), 1, "the first batch may overshoot");
    assert_eq!(found[1].batches.len(), 0, "the budget is spent");
    let found = state.find_batches(&[req(0), req(1)], 250);
    assert_eq!((found[0].batches.len(), found[1].batches.len()), (2, 0));
    let found = state.find_batches(&[req(0), req(1)], 300);
    assert_eq!((found[0].batches.len(), found[1].batches.len()), (2, 1));
}
