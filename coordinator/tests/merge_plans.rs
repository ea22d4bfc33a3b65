//! When merging takes a partition: from its first small share of a WAL object (its
//! consecutive batches in one object) on, while its shares there average under the policy's
//! bytes; large shares before that are left as they are.

use shoal_coordinator::state::MergePolicy;
use shoal_coordinator::*;
use uuid::Uuid;

const NOW: i64 = 1_700_000_000_000;

fn partition() -> TopicPartition {
    TopicPartition {
        topic_id: Uuid::from_u128(9),
        partition: 0,
    }
}

/// A state whose partition holds one object per entry of `shares`, each share being that
/// object's batches (their sizes).
fn stored(shares: &[&[u32]]) -> CoordinatorState {
    let mut state = CoordinatorState::default();
    let tp = partition();
    let entry = state
        .create_topic("t", 1, tp.topic_id, TopicConfig::default(), NOW)
        .unwrap();
    state.apply(&entry);
    for (i, sizes) in shares.iter().enumerate() {
        let mut byte_offset = 0;
        let batches: Vec<CommitBatch> = sizes
            .iter()
            .map(|&size_bytes| {
                let batch = CommitBatch {
                    partition: tp,
                    byte_offset,
                    size_bytes,
                    offset_count: 10,
                    max_timestamp: NOW,
                    producer_id: -1,
                    producer_epoch: -1,
                    base_sequence: -1,
                    kind: BatchKind::Plain,
                    kept_base_offset: None,
                    joins_transaction: false,
                };
                byte_offset += size_bytes;
                batch
            })
            .collect();
        let object = NewObject::uploaded(format!("wal/{i}"), byte_offset as u64, 0);
        let (results, entry) = state.commit_file(&object, &batches, NOW);
        assert!(results.iter().all(|r| r.error.is_none()), "{results:?}");
        state.apply(&entry.expect("a commit entry"));
    }
    state
}

fn policy(min_bytes: u64) -> MergePolicy {
    MergePolicy {
        min_bytes,
        max_age_ms: i64::MAX,
        below_bytes: 16 << 10,
    }
}

fn plan(state: &CoordinatorState, merge: MergePolicy) -> Option<RewritePlan> {
    state.rewrite_plans((0, 1), merge, NOW, 8).pop()
}

#[test]
fn a_merge_starts_at_the_first_small_share_and_takes_what_follows() {
    // Offsets 0-9 in a 100 KiB share, then 10-19, 20-29 alone (1000 B each), then 30-49 in
    // one object as two batches (1200 B together), then 50-69 as two 10 KiB batches of one
    // object (a 20 KiB share, large though each batch is small): from offset 10 on, 23,680 B
    // in 4 shares, 5,920 B on average.
    let state = stored(&[
        &[100 << 10],
        &[1000],
        &[1000],
        &[600, 600],
        &[10 << 10, 10 << 10],
    ]);
    let due = plan(&state, policy(23_680)).expect("23,680 B from the first small share");
    assert_eq!(due.kind, RewriteKind::Merge);
    assert_eq!(due.from_offset, 10, "the large share before it stays");
    assert!(plan(&state, policy(23_681)).is_none());
    let every_share = MergePolicy {
        below_bytes: u64::MAX,
        ..policy(126_080)
    };
    let all = plan(&state, every_share).expect("with every share counted it is due");
    assert_eq!(all.from_offset, 0);
}

#[test]
fn large_shares_on_average_are_left_as_they_are() {
    // A producer at full speed: shares around the threshold, most above it.
    let state = stored(&[
        &[20 << 10],
        &[15 << 10],
        &[70 << 10],
        &[60 << 10],
        &[16 << 10],
    ]);
    assert!(plan(&state, policy(1)).is_none());
    let merged_too = MergePolicy {
        below_bytes: 64 << 10,
        ..policy(1)
    };
    assert_eq!(plan(&state, merged_too).map(|p| p.from_offset), Some(0));
}

#[test]
fn age_starts_a_merge_only_for_small_shares() {
    let old = MergePolicy {
        max_age_ms: 0,
        ..policy(u64::MAX)
    };
    let later = |state: &CoordinatorState| state.rewrite_plans((0, 1), old, NOW + 1, 8).pop();
    let large_only = stored(&[&[100 << 10], &[20 << 10]]);
    assert!(later(&large_only).is_none(), "nothing small to merge");
    let one_small = stored(&[&[100 << 10], &[20], &[20 << 10]]);
    assert_eq!(later(&one_small).map(|p| p.from_offset), Some(10));
}
