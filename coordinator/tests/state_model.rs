//! Property test: random operation sequences against a simple model written from the rules in
//! diskless.md (offsets, idempotent producers, DeleteRecords), plus the promise that replaying
//! the produced records rebuilds an identical state.

use std::collections::HashMap;

use proptest::prelude::*;
use shoal_coordinator::*;
use shoal_protocol::records;
use uuid::Uuid;

#[derive(Debug, Clone)]
struct BatchSpec {
    topic: u8,
    partition: i32,
    count: u32,
    size: u32,
    /// (producer id, epoch, how to pick the sequence)
    producer: Option<(i64, i16, SeqPick)>,
}

#[derive(Debug, Clone, Copy)]
enum SeqPick {
    Next,
    RepeatLast,
    Random(i32),
}

#[derive(Debug, Clone)]
enum Op {
    Create {
        topic: u8,
        partitions: i32,
    },
    CreatePartitions {
        topic: u8,
        total: i32,
    },
    Delete {
        topic: u8,
    },
    Commit {
        batches: Vec<BatchSpec>,
    },
    Find {
        topic: u8,
        partition: i32,
        offset: i64,
    },
    DeleteRecords {
        topic: u8,
        partition: i32,
        offset: i64,
    },
    MirrorAdd {
        topic: u8,
    },
    MirrorCommit {
        topic: u8,
        partition: i32,
        gap: i64,
        count: i64,
    },
    MirrorRemove {
        topic: u8,
    },
    Truncate {
        topic: u8,
        partition: i32,
        offset: i64,
    },
    CommitOffset {
        group: u8,
        topic: u8,
        partition: i32,
        offset: i64,
    },
    DeleteGroup {
        group: u8,
    },
    /// OffsetDelete of these (topic, partition) pairs; possibly none.
    DeleteOffsets {
        group: u8,
        partitions: Vec<(u8, i32)>,
    },
}

fn seq_pick() -> impl Strategy<Value = SeqPick> {
    prop_oneof![
        4 => Just(SeqPick::Next),
        2 => Just(SeqPick::RepeatLast),
        1 => (0i32..20).prop_map(SeqPick::Random),
    ]
}

fn batch_spec() -> impl Strategy<Value = BatchSpec> {
    (
        0u8..3,
        0i32..3,
        1u32..5,
        1u32..200,
        prop::option::of((0i64..2, 0i16..3, seq_pick())),
    )
        .prop_map(|(topic, partition, count, size, producer)| BatchSpec {
            topic,
            partition,
            count,
            size,
            producer,
        })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (0u8..3, 1i32..4).prop_map(|(topic, partitions)| Op::Create { topic, partitions }),
        1 => (0u8..3).prop_map(|topic| Op::Delete { topic }),
        1 => (0u8..3, 1i32..5).prop_map(|(topic, total)| Op::CreatePartitions { topic, total }),
        4 => prop::collection::vec(batch_spec(), 1..6).prop_map(|batches| Op::Commit { batches }),
        2 => (0u8..3, 0i32..3, 0i64..30).prop_map(|(topic, partition, offset)| Op::Find {
            topic,
            partition,
            offset
        }),
        1 => (0u8..3, 0i32..3, -2i64..30).prop_map(|(topic, partition, offset)| Op::DeleteRecords {
            topic,
            partition,
            offset
        }),
        2 => (0u8..2, 0u8..3, 0i32..3, 0i64..50).prop_map(|(group, topic, partition, offset)| Op::CommitOffset {
            group,
            topic,
            partition,
            offset
        }),
        1 => (0u8..2).prop_map(|group| Op::DeleteGroup { group }),
        1 => (0u8..2, prop::collection::vec((0u8..3, 0i32..3), 0..3))
            .prop_map(|(group, partitions)| Op::DeleteOffsets { group, partitions }),
        1 => (0u8..3).prop_map(|topic| Op::MirrorAdd { topic }),
        3 => (0u8..3, 0i32..3, 0i64..3, 1i64..4).prop_map(|(topic, partition, gap, count)| Op::MirrorCommit {
            topic,
            partition,
            gap,
            count
        }),
        1 => (0u8..3).prop_map(|topic| Op::MirrorRemove { topic }),
        1 => (0u8..3, 0i32..3, 0i64..30).prop_map(|(topic, partition, offset)| Op::Truncate {
            topic,
            partition,
            offset
        }),
    ]
}

/// (base seq, last seq, base offset) of a producer's recent batches.
type Recent = Vec<(i32, i32, i64)>;

#[derive(Default, Clone)]
struct ModelPartition {
    log_start: i64,
    hwm: i64,
    /// (base offset, count) of live batches.
    batches: Vec<(i64, u32)>,
    /// producer id → (epoch, recent batches, oldest first, at most 5)
    producers: HashMap<i64, (i16, Recent)>,
    /// In a mirror (read-only, fetching).
    mirrored: bool,
}

#[derive(Default)]
struct Model {
    topics: HashMap<u8, (Uuid, Vec<ModelPartition>)>,
    /// group → (topic, partition) → committed offset
    groups: HashMap<u8, HashMap<(u8, i32), i64>>,
}

enum Expect {
    Append,
    Duplicate(i64),
    Reject(ErrorKind),
}

/// The idempotence rules of diskless.md, written out independently of the implementation.
fn expect_sequence(p: &ModelPartition, pid: i64, epoch: i16, base: i32, last: i32) -> Expect {
    match p.producers.get(&pid) {
        Some((e, _)) if *e > epoch => Expect::Reject(ErrorKind::InvalidProducerEpoch),
        Some((e, recent)) if *e == epoch && !recent.is_empty() => {
            if let Some((_, _, offset)) = recent.iter().find(|(b, l, _)| *b == base && *l == last) {
                return Expect::Duplicate(*offset);
            }
            let (_, prev_last, _) = recent.last().unwrap();
            let next = if *prev_last == i32::MAX {
                0
            } else {
                prev_last + 1
            };
            if base == next {
                Expect::Append
            } else {
                Expect::Reject(ErrorKind::OutOfOrderSequence)
            }
        }
        _ if base != 0 => Expect::Reject(ErrorKind::OutOfOrderSequence),
        _ => Expect::Append,
    }
}

fn pick_sequence(p: Option<&ModelPartition>, pid: i64, pick: SeqPick) -> i32 {
    let last = p
        .and_then(|p| p.producers.get(&pid))
        .and_then(|(_, r)| r.last().copied());
    match (pick, last) {
        (SeqPick::Next, Some((_, l, _))) => l + 1,
        (SeqPick::RepeatLast, Some((b, _, _))) => b,
        (SeqPick::Random(s), _) => s,
        (_, None) => 0,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    #[test]
    fn answers_match_the_model_and_replay_is_exact(ops in prop::collection::vec(op(), 1..80)) {
        let mut state = CoordinatorState::default();
        let mut model = Model::default();
        let mut log: Vec<Entry> = Vec::new();
        let mut published = TopicsView::default();
        let unknown = Uuid::from_u128(999);
        let mirror_config = vec![("bootstrap.servers".to_string(), "src:9092".to_string())];
        let record = state.create_mirror("m", &mirror_config, 0).unwrap();
        state.apply(&record);
        log.push(record);
        prop_assert!(state.create_mirror("m", &mirror_config, 0).is_err());
        for (step, op) in ops.into_iter().enumerate() {
            let now = step as i64;
            match op {
                Op::Create { topic, partitions } => {
                    let id = Uuid::from_u128(step as u128 + 1);
                    let result = state.create_topic(&format!("t{topic}"), partitions, id, TopicConfig::default(), now);
                    prop_assert_eq!(result.is_ok(), !model.topics.contains_key(&topic));
                    if let Ok(record) = result {
                        state.apply(&record);
                        log.push(record);
                        model.topics.insert(topic, (id, vec![ModelPartition::default(); partitions as usize]));
                    }
                }
                Op::CreatePartitions { topic, total } => {
                    let id = Uuid::from_u128(1000 + topic as u128);
                    let result = state.create_partitions(id, &format!("t{topic}"), total, now);
                    match model.topics.get_mut(&topic) {
                        Some((existing, _)) if *existing != id => {
                            prop_assert_eq!(result.err(), Some(ErrorKind::TopicAlreadyExists));
                        }
                        Some((_, partitions)) => {
                            let grows = total as usize > partitions.len();
                            let record = result.unwrap();
                            prop_assert_eq!(record.is_some(), grows);
                            if grows {
                                partitions.resize(total as usize, ModelPartition::default());
                            }
                            if let Some(record) = record {
                                state.apply(&record);
                                log.push(record);
                            }
                        }
                        None => {
                            let record = result.unwrap().expect("creates the topic");
                            state.apply(&record);
                            log.push(record);
                            model.topics.insert(topic, (id, vec![ModelPartition::default(); total as usize]));
                        }
                    }
                }
                Op::Delete { topic } => {
                    let result = state.delete_topic(&format!("t{topic}"), now);
                    prop_assert_eq!(result.is_ok(), model.topics.contains_key(&topic));
                    if let Ok((_, record)) = result {
                        state.apply(&record);
                        log.push(record);
                        model.topics.remove(&topic);
                        for offsets in model.groups.values_mut() {
                            offsets.retain(|(t, _), _| *t != topic);
                        }
                        model.groups.retain(|_, offsets| !offsets.is_empty());
                    }
                }
                Op::MirrorAdd { topic } => {
                    let source = MirroredTopic {
                        name: format!("t{topic}"),
                        partitions: 2,
                        source_topic_id: Uuid::from_u128(2000 + step as u128),
                    };
                    let result = state.add_topic_to_mirror("m", &source, Uuid::from_u128(3000 + step as u128), now);
                    let expect_ok = match model.topics.get(&topic) {
                        Some((_, parts)) => !parts.iter().any(|p| p.mirrored),
                        None => true,
                    };
                    prop_assert_eq!(result.is_ok(), expect_ok);
                    if let Ok(records) = result {
                        for record in records {
                            state.apply(&record);
                            log.push(record);
                        }
                        let entry = model.topics.entry(topic).or_insert((source.source_topic_id, Vec::new()));
                        if entry.1.len() < 2 {
                            entry.1.resize(2, ModelPartition::default());
                        }
                        for (i, p) in entry.1.iter_mut().enumerate() {
                            p.mirrored = true;
                            let tp = TopicPartition { topic_id: entry.0, partition: i as i32 };
                            for event in [MirrorEvent::BeginPreparing, MirrorEvent::Prepared] {
                                let (_, record) = state.mirror_event(tp, event, now).unwrap();
                                let record = record.expect("a transition");
                                state.apply(&record);
                                log.push(record);
                            }
                        }
                    }
                }
                Op::MirrorCommit { topic, partition, gap, count } => {
                    let tp = TopicPartition {
                        topic_id: model.topics.get(&topic).map(|t| t.0).unwrap_or(unknown),
                        partition,
                    };
                    let model_p = model.topics.get_mut(&topic).and_then(|t| t.1.get_mut(partition as usize));
                    let base = model_p.as_ref().map_or(0, |p| p.hwm) + gap;
                    let batch = CommitBatch {
                        partition: tp,
                        byte_offset: 0,
                        size_bytes: 10,
                        offset_count: count as u32,
                        max_timestamp: now,
                        producer_id: -1,
                        producer_epoch: -1,
                        base_sequence: -1,
                        kind: shoal_coordinator::BatchKind::Plain,
                        kept_base_offset: Some(base),
                        joins_transaction: false,
                    };
                    let (results, record) = state.commit_mirrored(&object(format!("mirror/{step}")), &[batch], now);
                    match model_p {
                        None => prop_assert_eq!(results[0].error, Some(ErrorKind::UnknownTopicOrPartition)),
                        Some(p) if !p.mirrored => prop_assert!(results[0].error.is_some()),
                        Some(p) => {
                            prop_assert_eq!(results[0].error, None);
                            prop_assert_eq!(results[0].base_offset, base);
                            p.batches.push((base, count as u32));
                            p.hwm = base + count;
                        }
                    }
                    let record = record.expect("a new object key is always recorded");
                    state.apply(&record);
                    log.push(record);
                }
                Op::MirrorRemove { topic } => {
                    let result = state.remove_topic_from_mirror("m", &format!("t{topic}"), now);
                    let active = model.topics.get(&topic).is_some_and(|t| t.1.iter().any(|p| p.mirrored));
                    prop_assert_eq!(result.is_ok(), active);
                    if let Ok(records) = result {
                        for record in records {
                            state.apply(&record);
                            log.push(record);
                        }
                        let (id, parts) = model.topics.get_mut(&topic).unwrap();
                        for (i, p) in parts.iter_mut().enumerate() {
                            if p.mirrored {
                                p.mirrored = false;
                                p.producers.clear();
                                let tp = TopicPartition { topic_id: *id, partition: i as i32 };
                                prop_assert_eq!(state.last_mirrored_offset("m", &format!("t{topic}"), i as i32), p.hwm.max(0));
                                prop_assert_eq!(state.last_mirrored_offset("other", &format!("t{topic}"), i as i32), 0);
                                let _ = tp;
                            }
                        }
                    }
                }
                Op::Truncate { topic, partition, offset } => {
                    let tp = TopicPartition {
                        topic_id: model.topics.get(&topic).map(|t| t.0).unwrap_or(unknown),
                        partition,
                    };
                    let result = state.truncate(tp, offset, now);
                    match model.topics.get_mut(&topic).and_then(|t| t.1.get_mut(partition as usize)) {
                        None => prop_assert_eq!(result.err(), Some(ErrorKind::UnknownTopicOrPartition)),
                        Some(p) => {
                            let record = result.unwrap();
                            prop_assert_eq!(record.is_some(), offset < p.hwm);
                            if let Some(record) = record {
                                state.apply(&record);
                                log.push(record);
                                p.batches.retain(|(b, _)| *b < offset);
                                let kept_end = p.batches.last().map_or(0, |(b, c)| b + *c as i64);
                                p.hwm = p.hwm.min(offset).max(kept_end);
                                p.log_start = p.log_start.min(p.hwm);
                                p.producers.clear();
                            }
                        }
                    }
                }
                Op::CommitOffset { group, topic, partition, offset } => {
                    let tp = TopicPartition {
                        topic_id: model.topics.get(&topic).map(|t| t.0).unwrap_or(unknown),
                        partition,
                    };
                    let entry = OffsetCommitEntry { partition: tp, offset, leader_epoch: -1, metadata: format!("m{step}") };
                    let (results, record) = state.commit_offsets(&format!("g{group}"), &[entry], now);
                    let known = model.topics.get(&topic).is_some_and(|t| (partition as usize) < t.1.len());
                    prop_assert_eq!(results[0].is_none(), known);
                    prop_assert_eq!(record.is_some(), known);
                    if let Some(record) = record {
                        state.apply(&record);
                        log.push(record);
                        model.groups.entry(group).or_default().insert((topic, partition), offset);
                    }
                    let fetched = state.fetch_offsets(&format!("g{group}"), Some(&[tp]));
                    let expected = model.groups.get(&group).and_then(|o| o.get(&(topic, partition)));
                    prop_assert_eq!(fetched[0].1.as_ref().map(|s| s.offset), expected.copied());
                }
                Op::DeleteOffsets { group, partitions } => {
                    let name = format!("g{group}");
                    let tps: Vec<TopicPartition> = partitions
                        .iter()
                        .map(|(topic, partition)| TopicPartition {
                            topic_id: model.topics.get(topic).map(|t| t.0).unwrap_or(unknown),
                            partition: *partition,
                        })
                        .collect();
                    let (existed, record) = state.delete_offsets(&name, &tps, now);
                    prop_assert_eq!(existed, model.groups.contains_key(&group));
                    if let Some(record) = record {
                        state.apply(&record);
                        log.push(record);
                    }
                    if let Some(offsets) = model.groups.get_mut(&group) {
                        for key in &partitions {
                            offsets.remove(key);
                        }
                        if offsets.is_empty() {
                            model.groups.remove(&group);
                        }
                    }
                    // Everything not named is still there, exactly.
                    let mut fetched: Vec<(TopicPartition, i64)> = state
                        .fetch_offsets(&name, None)
                        .into_iter()
                        .filter_map(|(tp, stored)| stored.map(|s| (tp, s.offset)))
                        .collect();
                    let mut expected: Vec<(TopicPartition, i64)> = model
                        .groups
                        .get(&group)
                        .map(|offsets| {
                            offsets
                                .iter()
                                .map(|((topic, partition), offset)| {
                                    let topic_id = model.topics[topic].0;
                                    (TopicPartition { topic_id, partition: *partition }, *offset)
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    fetched.sort();
                    expected.sort();
                    prop_assert_eq!(fetched, expected);
                }
                Op::DeleteGroup { group } => {
                    let record = state.delete_group(&format!("g{group}"), now);
                    prop_assert_eq!(record.is_some(), model.groups.remove(&group).is_some());
                    if let Some(record) = record {
                        state.apply(&record);
                        log.push(record);
                    }
                    let name = format!("g{group}");
                    prop_assert!(state.fetch_offsets(&name, None).is_empty());
                }
                Op::Commit { batches } => {
                    let mut commit = Vec::new();
                    let mut byte_offset = 0;
                    // Sequences are picked against the model as it stands before the commit.
                    for spec in &batches {
                        let model_partition = model.topics.get(&spec.topic).and_then(|t| t.1.get(spec.partition as usize));
                        let (producer_id, producer_epoch, base_sequence) = match spec.producer {
                            Some((pid, epoch, pick)) => (pid, epoch, pick_sequence(model_partition, pid, pick)),
                            None => (-1, -1, -1),
                        };
                        commit.push(CommitBatch {
                            partition: TopicPartition {
                                topic_id: model.topics.get(&spec.topic).map(|t| t.0).unwrap_or(unknown),
                                partition: spec.partition,
                            },
                            byte_offset,
                            size_bytes: spec.size,
                            offset_count: spec.count,
                            max_timestamp: now,
                            producer_id,
                            producer_epoch,
                            base_sequence,
                            kind: shoal_coordinator::BatchKind::Plain,
                            kept_base_offset: None,
                            joins_transaction: false,
                        });
                        byte_offset += spec.size;
                    }
                    let (results, record) = state.commit_file(&object(format!("wal/{step}")), &commit, now);
                    let record = record.expect("a new object key is always recorded");
                    for ((spec, batch), result) in batches.iter().zip(&commit).zip(&results) {
                        let Some(p) = model.topics.get_mut(&spec.topic).and_then(|t| t.1.get_mut(spec.partition as usize)) else {
                            prop_assert_eq!(result.error, Some(ErrorKind::UnknownTopicOrPartition));
                            continue;
                        };
                        let last_seq = batch.base_sequence + spec.count as i32 - 1;
                        let expect = match spec.producer {
                            _ if p.mirrored => Expect::Reject(ErrorKind::ReadOnlyTopic),
                            Some((pid, epoch, _)) => expect_sequence(p, pid, epoch, batch.base_sequence, last_seq),
                            None => Expect::Append,
                        };
                        match expect {
                            Expect::Append => {
                                prop_assert_eq!(result.error, None);
                                prop_assert!(!result.is_duplicate);
                                prop_assert_eq!(result.base_offset, p.hwm);
                                p.batches.push((p.hwm, spec.count));
                                if let Some((pid, epoch, _)) = spec.producer {
                                    let entry = p.producers.entry(pid).or_insert((epoch, Vec::new()));
                                    if entry.0 != epoch {
                                        *entry = (epoch, Vec::new());
                                    }
                                    entry.1.push((batch.base_sequence, last_seq, p.hwm));
                                    if entry.1.len() > 5 {
                                        entry.1.remove(0);
                                    }
                                }
                                p.hwm += spec.count as i64;
                            }
                            Expect::Duplicate(offset) => {
                                prop_assert_eq!(result.error, None);
                                prop_assert!(result.is_duplicate);
                                prop_assert_eq!(result.base_offset, offset);
                            }
                            Expect::Reject(error) => prop_assert_eq!(result.error, Some(error)),
                        }
                    }
                    state.apply(&record);
                    log.push(record);
                }
                Op::DeleteRecords { topic, partition, offset } => {
                    let tp = TopicPartition {
                        topic_id: model.topics.get(&topic).map(|t| t.0).unwrap_or(unknown),
                        partition,
                    };
                    let result = state.delete_records(tp, offset, now);
                    match model.topics.get_mut(&topic).and_then(|t| t.1.get_mut(partition as usize)) {
                        None => prop_assert_eq!(result.err(), Some(ErrorKind::UnknownTopicOrPartition)),
                        Some(p) => {
                            let target = if offset == -1 { p.hwm } else { offset };
                            if target < 0 || target > p.hwm {
                                prop_assert_eq!(result.err(), Some(ErrorKind::OffsetOutOfRange));
                            } else {
                                let (start, record) = result.unwrap();
                                p.log_start = p.log_start.max(target);
                                p.batches.retain(|(b, c)| b + *c as i64 > p.log_start);
                                prop_assert_eq!(start, p.log_start);
                                if let Some(record) = record {
                                    state.apply(&record);
                                    log.push(record);
                                }
                            }
                        }
                    }
                }
                Op::Find { topic, partition, offset } => {
                    let request = FindBatchesRequest {
                        read_committed: false,
                        partition: TopicPartition {
                            topic_id: model.topics.get(&topic).map(|t| t.0).unwrap_or(unknown),
                            partition,
                        },
                        offset,
                        max_partition_bytes: u32::MAX,
                        max_batches: u32::MAX,
                    };
                    let found = &state.find_batches(&[request], u32::MAX)[0];
                    match model.topics.get(&topic).and_then(|t| t.1.get(partition as usize)) {
                        None => prop_assert_eq!(found.error, Some(ErrorKind::UnknownTopicOrPartition)),
                        Some(p) => {
                            prop_assert_eq!(found.high_watermark, p.hwm);
                            prop_assert_eq!(found.log_start_offset, p.log_start);
                            if offset > p.hwm || offset < p.log_start {
                                prop_assert_eq!(found.error, Some(ErrorKind::OffsetOutOfRange));
                            } else {
                                let expected: Vec<(i64, i64)> = p.batches.iter()
                                    .filter(|(b, c)| b + *c as i64 > offset)
                                    .map(|(b, c)| (*b, b + *c as i64 - 1))
                                    .collect();
                                let got: Vec<(i64, i64)> = found.batches.iter().map(|b| (b.base_offset, b.last_offset)).collect();
                                prop_assert_eq!(got, expected);
                            }
                        }
                    }
                }
            }
            // The view published image by image shows what one built whole would.
            if let Some(next) = state.view_after(&published) {
                published = next;
            }
            prop_assert!(published == state.topics_view(), "the published view after step {}", step);
        }
        let mut replayed = CoordinatorState::default();
        for record in &log {
            replayed.apply(record);
        }
        prop_assert_eq!(&replayed, &state);
        let image = state.encode_snapshot();
        prop_assert_eq!(&CoordinatorState::decode_snapshot(&image).unwrap(), &state);
        // Any damage to the image is detected, never loaded.
        let mut damaged = image.clone();
        let at = damaged.len() / 2;
        damaged[at] ^= 0x10;
        prop_assert!(CoordinatorState::decode_snapshot(&damaged).is_err());
        prop_assert!(CoordinatorState::decode_snapshot(&image[..image.len() - 1]).is_err());
    }
}

/// A batch of a producer that is neither idempotent nor transactional, written at time 0.
fn plain_batch(partition: TopicPartition, offset_count: u32, size_bytes: u32) -> CommitBatch {
    CommitBatch {
        partition,
        byte_offset: 0,
        size_bytes,
        offset_count,
        max_timestamp: 0,
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
        kind: shoal_coordinator::BatchKind::Plain,
        kept_base_offset: None,
        joins_transaction: false,
    }
}

/// A state holding one topic "t" with id 1.
fn one_topic(partitions: i32, config: TopicConfig) -> (CoordinatorState, Uuid) {
    let mut state = CoordinatorState::default();
    let id = Uuid::from_u128(1);
    state.apply(&state.create_topic("t", partitions, id, config, 0).unwrap());
    (state, id)
}

#[test]
fn find_batches_spends_one_budget_and_lets_only_the_first_batch_overshoot() {
    let (mut state, id) = one_topic(2, TopicConfig::default());
    let batch = |partition, size| {
        let tp = TopicPartition {
            topic_id: id,
            partition,
        };
        plain_batch(tp, 1, size)
    };
    let (_, record) = state.commit_file(
        &object("wal/a"),
        &[batch(0, 100), batch(0, 100), batch(1, 100)],
        0,
    );
    state.apply(&record.unwrap());
    let (again, record) = state.commit_file(&object("wal/a"), &[batch(0, 100)], 0);
    assert!(record.is_none(), "a repeated object key appends nothing");
    assert_eq!(again[0].error, Some(ErrorKind::InvalidRequest));
    let req = |partition| FindBatchesRequest {
        read_committed: false,
        partition: TopicPartition {
            topic_id: id,
            partition,
        },
        offset: 0,
        max_partition_bytes: 1000,
        max_batches: u32::MAX,
    };
    let found = state.find_batches(&[req(0), req(1)], 50);
    assert_eq!(found[0].batches.len(), 1, "the first batch may overshoot");
    assert_eq!(found[1].batches.len(), 0, "the budget is spent");
    let found = state.find_batches(&[req(0), req(1)], 250);
    assert_eq!((found[0].batches.len(), found[1].batches.len()), (2, 0));
    let found = state.find_batches(&[req(0), req(1)], 300);
    assert_eq!((found[0].batches.len(), found[1].batches.len()), (2, 1));
}

#[test]
fn retention_trims_by_time_and_size_in_bounded_steps_and_files_become_deletable() {
    let config = TopicConfig {
        retention_ms: 1000,
        retention_bytes: 250,
        ..TopicConfig::default()
    };
    let (mut state, id) = one_topic(1, config);
    let tp = TopicPartition {
        topic_id: id,
        partition: 0,
    };
    for (i, ts) in [100, 200, 5000, 6000].into_iter().enumerate() {
        let batch = CommitBatch {
            partition: tp,
            byte_offset: 0,
            size_bytes: 100,
            offset_count: 2,
            max_timestamp: ts,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            kind: shoal_coordinator::BatchKind::Plain,
            kept_base_offset: None,
            joins_transaction: false,
        };
        let (_, record) = state.commit_file(&object(format!("wal/{i}")), &[batch], ts);
        state.apply(&record.unwrap());
    }
    // At 5500 the first two batches are older than 1000 ms; one step may drop only one.
    let records = state.retention_records(5500, 1);
    assert_eq!(records.len(), 1);
    state.apply(&records[0]);
    assert_eq!(state.log_start_offset(tp), Some(2));
    for record in state.retention_records(5500, 100) {
        state.apply(&record);
    }
    assert_eq!(state.log_start_offset(tp), Some(4));
    assert_eq!(
        state.expired_deletable_files(5501, 10),
        vec!["wal/0", "wal/1"]
    );
    assert!(!state.has_live_batches("wal/0") && state.has_live_batches("wal/2"));
    // 200 bytes left, under retention.bytes; nothing more to do until time passes.
    assert!(state.retention_records(5500, 100).is_empty());
    let records = state.retention_records(7500, 100);
    state.apply(&records[0]);
    assert_eq!(state.log_start_offset(tp), Some(8));
    let deleted = records::ShoalFilesDeletedRecord {
        object_keys: vec!["wal/0".into()],
    };
    state.apply(&Entry::of(6000, deleted));
    assert_eq!(
        state.expired_deletable_files(i64::MAX, 10),
        vec!["wal/1", "wal/2", "wal/3"]
    );
}

#[test]
fn idle_producers_expire_in_bounded_steps() {
    let (mut state, id) = one_topic(1, TopicConfig::default());
    let tp = TopicPartition {
        topic_id: id,
        partition: 0,
    };
    for (producer_id, at) in [(7, 100), (8, 300)] {
        let batch = CommitBatch {
            partition: tp,
            byte_offset: 0,
            size_bytes: 10,
            offset_count: 5,
            max_timestamp: at,
            producer_id,
            producer_epoch: 0,
            base_sequence: 0,
            kind: shoal_coordinator::BatchKind::Plain,
            kept_base_offset: None,
            joins_transaction: false,
        };
        let (_, record) = state.commit_file(&object(format!("wal/{producer_id}")), &[batch], at);
        state.apply(&record.unwrap());
    }
    assert!(
        state.producer_expiry_records(100, 10, 1000).is_empty(),
        "nobody idle before 100"
    );
    let records = state.producer_expiry_records(200, 10, 1000);
    let expired = records::ShoalProducersExpiredRecord {
        topic_id: id,
        partition_index: 0,
        producer_ids: vec![7],
    };
    assert_eq!(records, vec![Entry::of(1000, expired)]);
    state.apply(&records[0]);
    let next = |producer_id, base_sequence| CommitBatch {
        partition: tp,
        byte_offset: 0,
        size_bytes: 10,
        offset_count: 1,
        max_timestamp: 0,
        producer_id,
        producer_epoch: 0,
        base_sequence,
        kind: shoal_coordinator::BatchKind::Plain,
        kept_base_offset: None,
        joins_transaction: false,
    };
    // Producer 7 is forgotten: its next sequence is out of order, a fresh start is accepted.
    let (results, _) =
        state.commit_file(&object("wal/a"), &[next(7, 5), next(7, 0), next(8, 5)], 400);
    assert_eq!(results[0].error, Some(ErrorKind::OutOfOrderSequence));
    assert_eq!(results[1].error, None);
    assert_eq!(results[2].error, None, "producer 8 is still known");
    assert_eq!(
        state.producer_expiry_records(i64::MAX, 1, 1000).len(),
        1,
        "one step, one producer"
    );
}

#[test]
fn offsets_of_idle_groups_without_members_expire() {
    let (mut state, id) = one_topic(1, TopicConfig::default());
    let entry = OffsetCommitEntry {
        partition: TopicPartition {
            topic_id: id,
            partition: 0,
        },
        offset: 5,
        leader_epoch: 0,
        metadata: String::new(),
    };
    for (group, at) in [("old", 100), ("busy", 100), ("recent", 900)] {
        let (results, record) = state.commit_offsets(group, std::slice::from_ref(&entry), at);
        assert_eq!(results, vec![None]);
        state.apply(&record.unwrap());
    }
    let too_long = OffsetCommitEntry {
        metadata: "m".repeat(5000),
        ..entry.clone()
    };
    let (results, record) = state.commit_offsets("old", &[too_long], 950);
    assert_eq!(results, vec![Some(ErrorKind::OffsetMetadataTooLarge)]);
    assert!(record.is_none());
    // Committed before 500 and no members: only "old" expires ("busy" has members).
    let expired = state.offset_expiry_records(500, &["busy".to_string()], 10, 1000);
    assert_eq!(expired.len(), 1);
    for record in &expired {
        state.apply(record);
    }
    assert_eq!(
        state.offset_groups(),
        vec!["busy".to_string(), "recent".to_string()]
    );
}

#[test]
fn a_groups_lag_is_the_records_between_its_commits_and_the_high_watermarks() {
    let (mut state, id) = one_topic(2, TopicConfig::default());
    let tp = |partition| TopicPartition {
        topic_id: id,
        partition,
    };
    let batches = [plain_batch(tp(0), 10, 100), plain_batch(tp(1), 4, 100)];
    let (_, record) = state.commit_file(&object("wal/lag"), &batches, 0);
    state.apply(&record.unwrap());
    let commit = |partition, offset| OffsetCommitEntry {
        partition: tp(partition),
        offset,
        leader_epoch: 0,
        metadata: String::new(),
    };
    // Partition 0 is 7 behind, partition 1 committed past its end (no lag).
    let (_, record) = state.commit_offsets("readers", &[commit(0, 3), commit(1, 9)], 1);
    state.apply(&record.unwrap());
    let lags = state.group_lags();
    assert_eq!(lags.len(), 1);
    assert_eq!(
        (
            lags[0].group.as_str(),
            lags[0].partitions,
            lags[0].total,
            lags[0].max
        ),
        ("readers", 2, 7, 7)
    );
}

/// An object of 1 KiB uploaded by broker 0.
fn object(key: impl Into<String>) -> NewObject {
    NewObject::uploaded(key, 1024, 0)
}

#[test]
fn only_mirrored_commits_keep_offsets() {
    let (state, id) = one_topic(1, TopicConfig::default());
    let kept = CommitBatch {
        partition: TopicPartition {
            topic_id: id,
            partition: 0,
        },
        byte_offset: 0,
        size_bytes: 100,
        offset_count: 3,
        max_timestamp: 0,
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
        kind: shoal_coordinator::BatchKind::Plain,
        kept_base_offset: Some(40),
        joins_transaction: false,
    };
    assert_eq!(kept.kept_offsets(), Some((40, 42)));
    // A produced batch is given its offsets: one that claims its own is refused.
    let (results, _) = state.commit_file(&object("wal/a"), &[kept], 0);
    assert_eq!(results[0].error, Some(ErrorKind::InvalidRequest));
    // A mirrored batch must keep some (and this topic is no mirror, so it is refused anyway).
    let assigned = CommitBatch {
        kept_base_offset: None,
        joins_transaction: false,
        ..kept
    };
    assert_eq!(assigned.kept_offsets(), None);
    let (results, _) = state.commit_mirrored(&object("mirror/a"), &[assigned], 0);
    assert!(results[0].error.is_some());
    let empty = CommitBatch {
        offset_count: 0,
        ..kept
    };
    assert_eq!(
        empty.kept_offsets(),
        None,
        "a batch occupies at least one offset"
    );
}
