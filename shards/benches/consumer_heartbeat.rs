//! What a consumer-protocol heartbeat costs the group's shard (`cargo bench -p shoal-shards
//! --bench consumer_heartbeat`): heartbeats a second on one core for a settled group (every
//! member stable), by group size, subscribed by topic names and by a regular expression over
//! a cluster of 1,000 topics; and the time for a group to settle after a member joins.
//! Writes perf-results/<date>-consumer-heartbeat.json with the workload.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::json;
use shoal_coordinator::{TopicConfig, TopicMeta, TopicPartition, TopicsView};
use shoal_shards::groups::consumer::assignor::Assignor;
use shoal_shards::groups::consumer::group::{ConsumerGroup, Heartbeat, JOIN_EPOCH};
use uuid::Uuid;

mod perf_results;

const TOPICS: usize = 1_000;
const SUBSCRIBED: usize = 10;
const PARTITIONS: i32 = 32;

type Topics = TopicsView;

struct Client {
    id: String,
    epoch: i32,
    owned: BTreeSet<TopicPartition>,
}

fn request(client: &Client, regex: bool) -> Heartbeat {
    let joining = client.epoch == JOIN_EPOCH;
    let names = (0..SUBSCRIBED).map(|i| format!("topic-{i:04}")).collect();
    Heartbeat {
        member_id: client.id.clone(),
        member_epoch: client.epoch,
        rebalance_timeout_ms: if joining { 30_000 } else { -1 },
        subscribed_topic_names: (joining && !regex).then_some(names),
        subscribed_topic_regex: (joining && regex).then(|| "topic-000[0-9]".to_string()),
        owned: Some(client.owned.clone()),
        ..Heartbeat::default()
    }
}

fn beat(group: &mut ConsumerGroup, client: &mut Client, topics: &Topics, regex: bool) {
    // As the shard's registry does before every heartbeat.
    group.expire(Instant::now());
    let answer = group
        .heartbeat(request(client, regex), topics, Instant::now())
        .expect("heartbeat");
    // And after it: what changed, as the records to store (nothing, when steady).
    std::hint::black_box(group.take_change("bench"));
    client.epoch = answer.member_epoch;
    if let Some(assignment) = answer.assignment {
        client.owned = assignment;
    }
}

fn settle(group: &mut ConsumerGroup, clients: &mut [Client], topics: &Topics, regex: bool) {
    for _ in 0..4 {
        for client in clients.iter_mut() {
            beat(group, client, topics, regex);
        }
    }
}

fn main() {
    let topics = TopicsView::new((0..TOPICS).map(|i| TopicMeta {
        name: format!("topic-{i:04}"),
        id: Uuid::from_u128(i as u128 + 1),
        partitions: PARTITIONS,
        config: TopicConfig::default(),
        overrides: Default::default(),
        mirror: None,
    }));
    let mut rows = Vec::new();
    for regex in [false, true] {
        for members in [10usize, 100, 1_000] {
            let mut group = ConsumerGroup::new(Assignor::Uniform, 10_000, Duration::from_secs(45));
            let mut clients: Vec<Client> = (0..members)
                .map(|i| Client {
                    id: format!("member-{i}"),
                    epoch: JOIN_EPOCH,
                    owned: BTreeSet::new(),
                })
                .collect();
            settle(&mut group, &mut clients, &topics, regex);
            let started = Instant::now();
            let mut beats = 0u64;
            while started.elapsed() < Duration::from_secs(1) {
                for client in clients.iter_mut() {
                    beat(&mut group, client, &topics, regex);
                    beats += 1;
                }
            }
            let per_s = beats as f64 / started.elapsed().as_secs_f64();
            // One more member: the time for every member to settle again.
            clients.push(Client {
                id: "latecomer".into(),
                epoch: JOIN_EPOCH,
                owned: BTreeSet::new(),
            });
            let rebalance = Instant::now();
            settle(&mut group, &mut clients, &topics, regex);
            let rebalance_ms = rebalance.elapsed().as_secs_f64() * 1000.0;
            let owned: usize = clients.iter().map(|c| c.owned.len()).sum();
            assert_eq!(owned, SUBSCRIBED * PARTITIONS as usize, "settled");
            println!(
                "{members:>5} members, {}: {per_s:>10.0} heartbeats/s; a join settles in {rebalance_ms:.1} ms of CPU",
                if regex { "regex" } else { "names" }
            );
            rows.push(json!({"members": members, "subscription": if regex { "regex" } else { "names" },
                "heartbeats_per_s": per_s.round(), "join_settle_cpu_ms": (rebalance_ms * 10.0).round() / 10.0}));
        }
    }
    let doc = json!({
        "tool": "cargo bench -p shoal-shards --bench consumer_heartbeat",
        "workload": {
            "what": "ConsumerGroup::expire then ::heartbeat (as the shard's registry calls them) on one thread, the group settled (every member stable); then one member joins and every member heartbeats until settled (4 rounds)",
            "cluster": format!("{TOPICS} topics of {PARTITIONS} partitions"),
            "subscription": format!("{SUBSCRIBED} topics, by names or by the regex topic-000[0-9]"),
            "assignor": "uniform",
        },
        "results": rows,
    });
    perf_results::write("consumer-heartbeat", &doc);
}
