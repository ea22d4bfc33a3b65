//! What publishing the shards' view costs on a broker with many topics, whole (every image
//! rebuilt, as before images) against image by image (`view_after`), in the same run on the
//! same state, after three kinds of change: a commit (another broker's produce, caught up on a
//! cluster's shared log), an ACL created, and one topic's config altered.
//!
//!     cargo bench -p shoal-coordinator --bench view_publish -- [TOPICS] [ROUNDS]
//!
//! Prints one JSON object: per change, the median and p90 microseconds of each way.

use std::collections::BTreeMap;
use std::time::Instant;

use shoal_coordinator::acl::AclBinding;
use shoal_coordinator::{
    BatchKind, CommitBatch, CoordinatorState, Entry, NewObject, TopicConfig, TopicPartition,
    TopicsView,
};
use shoal_protocol::acl_codes as code;
use uuid::Uuid;

const PARTITIONS_PER_TOPIC: i32 = 6;

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let topics = args.first().copied().unwrap_or(10_000);
    let rounds = args.get(1).copied().unwrap_or(50);
    let mut state = CoordinatorState::default();
    for t in 0..topics {
        let id = Uuid::from_u128(t as u128 + 1);
        let name = format!("topic-{t}");
        let entry = state
            .create_topic(&name, PARTITIONS_PER_TOPIC, id, TopicConfig::default(), 0)
            .expect("a new topic");
        state.apply(&entry);
    }
    let mut published = state.view_after(&TopicsView::default()).expect("all new");
    let mut rebuilt = state.topics_view();
    let mut results = BTreeMap::new();
    for change in ["commit", "acl_created", "topic_config_altered"] {
        let (mut whole, mut by_image) = (Vec::new(), Vec::new());
        for round in 0..rounds {
            let entry = change_entry(&state, change, round, topics);
            state.apply(&entry);
            // Each way replaces (so frees) the view it published before, as the shards'
            // swap does once no reader holds it.
            let started = Instant::now();
            drop(std::mem::replace(&mut rebuilt, state.topics_view()));
            whole.push(started.elapsed().as_secs_f64() * 1e6);
            let started = Instant::now();
            if let Some(next) = state.view_after(&published) {
                published = next;
            }
            by_image.push(started.elapsed().as_secs_f64() * 1e6);
            assert!(published == rebuilt, "both ways show the same");
        }
        results.insert(
            change,
            format!(
                r#"{{"whole_us": {}, "by_image_us": {}}}"#,
                summary(&mut whole),
                summary(&mut by_image)
            ),
        );
    }
    let body: Vec<String> = (results.iter())
        .map(|(change, result)| format!(r#""{change}": {result}"#))
        .collect();
    println!(
        r#"{{"topics": {topics}, "partitions_per_topic": {PARTITIONS_PER_TOPIC}, "rounds": {rounds}, {}}}"#,
        body.join(", ")
    );
}

/// The entry of one change of the given kind.
fn change_entry(state: &CoordinatorState, change: &str, round: usize, topics: usize) -> Entry {
    let now = 1 + round as i64;
    match change {
        "commit" => {
            let batch = CommitBatch {
                partition: TopicPartition {
                    topic_id: Uuid::from_u128((round % topics) as u128 + 1),
                    partition: 0,
                },
                byte_offset: 0,
                size_bytes: 1024,
                offset_count: 10,
                max_timestamp: now,
                producer_id: -1,
                producer_epoch: -1,
                base_sequence: -1,
                kind: BatchKind::Plain,
                kept_base_offset: None,
                joins_transaction: false,
            };
            let object = NewObject::uploaded(format!("object-{round}"), 1024, 0);
            let (_, entry) = state.commit_file(&object, &[batch], now);
            entry.expect("a batch of a known partition")
        }
        "acl_created" => {
            let binding = AclBinding {
                resource_type: code::TOPIC,
                resource_name: format!("topic-{round}"),
                pattern_type: code::LITERAL,
                principal: "User:bench".into(),
                host: "*".into(),
                operation: code::READ,
                permission: code::ALLOW,
            };
            (state.create_acl(&binding, now).expect("valid")).expect("a new binding")
        }
        _ => {
            let own = BTreeMap::from([("retention.ms".to_string(), (60_000 + round).to_string())]);
            let name = format!("topic-{}", round % topics);
            (state.alter_topic_config(&name, &own, now).expect("a topic"))
                .expect("a different config")
        }
    }
}

/// `{"p50": .., "p90": ..}` of the samples, in microseconds.
fn summary(samples: &mut [f64]) -> String {
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    format!(r#"{{"p50": {:.1}, "p90": {:.1}}}"#, at(0.5), at(0.9))
}
