//! What a streams-group heartbeat (KIP-1071) costs the group's shard (`cargo bench -p
//! shoal-shards --bench streams_heartbeat`): heartbeats a second on one core for a settled
//! group (every member running its tasks), by group size, for a topology of two
//! subtopologies over 64 partitions with one standby per task; and the CPU time for the
//! group to settle again after a member joins. Writes
//! perf-results/<date>-streams-heartbeat.json with the workload.

use std::time::{Duration, Instant};

use serde_json::json;
use shoal_coordinator::{TopicConfig, TopicMeta, TopicsView};
use shoal_shards::groups::streams::group::{StreamsGroup, StreamsHeartbeat};
use shoal_shards::groups::streams::tasks::Tasks;
use shoal_shards::groups::streams::topology::{Subtopology, Topology};
use uuid::Uuid;

mod perf_results;

const PARTITIONS: i32 = 64;
const STANDBYS: usize = 1;
const JOIN_EPOCH: i32 = 0;

struct Client {
    id: String,
    process: String,
    epoch: i32,
    owned: Tasks,
}

fn topology() -> Topology {
    let subtopology = |id: &str, source: &str| Subtopology {
        id: id.into(),
        source_topics: vec![source.into()],
        ..Default::default()
    };
    Topology {
        epoch: 0,
        subtopologies: vec![subtopology("0", "orders"), subtopology("1", "payments")],
    }
}

fn request(client: &Client) -> StreamsHeartbeat {
    let joining = client.epoch == JOIN_EPOCH;
    StreamsHeartbeat {
        member_id: client.id.clone(),
        member_epoch: client.epoch,
        rebalance_timeout_ms: if joining { 30_000 } else { -1 },
        topology: joining.then(topology),
        owned: Some(client.owned.clone()),
        process_id: joining.then(|| client.process.clone()),
        ..Default::default()
    }
}

fn beat(group: &mut StreamsGroup, client: &mut Client, topics: &TopicsView) {
    // As the shard's registry does before every heartbeat.
    group.expire(Instant::now());
    let answer = group
        .heartbeat(request(client), topics, Instant::now())
        .expect("heartbeat");
    // And after it: what changed, as the records to store (nothing, when steady).
    std::hint::black_box(group.take_change("bench"));
    client.epoch = answer.member_epoch;
    if let Some(tasks) = answer.tasks {
        client.owned = tasks;
    }
}

fn settle(group: &mut StreamsGroup, clients: &mut [Client], topics: &TopicsView) {
    for _ in 0..6 {
        for client in clients.iter_mut() {
            beat(group, client, topics);
        }
    }
}

fn client(name: String) -> Client {
    Client {
        process: format!("{name}-process"),
        id: name,
        epoch: JOIN_EPOCH,
        owned: Tasks::default(),
    }
}

fn main() {
    let topics =
        TopicsView::new(
            ["orders", "payments"]
                .iter()
                .enumerate()
                .map(|(i, name)| TopicMeta {
                    name: name.to_string(),
                    id: Uuid::from_u128(i as u128 + 1),
                    partitions: PARTITIONS,
                    config: TopicConfig::default(),
                    overrides: Default::default(),
                    mirror: None,
                }),
        );
    let tasks = 2 * PARTITIONS as usize;
    let mut rows = Vec::new();
    for members in [10usize, 100, 1_000] {
        let mut group = StreamsGroup::new(10_000, Duration::from_secs(45), STANDBYS);
        let mut clients: Vec<Client> = (0..members).map(|i| client(format!("m{i}"))).collect();
        settle(&mut group, &mut clients, &topics);
        let active: usize = clients.iter().map(|c| c.owned.active.len()).sum();
        assert_eq!(active, tasks, "settled: every task runs once");
        let started = Instant::now();
        let mut beats = 0u64;
        while started.elapsed() < Duration::from_secs(1) {
            for client in clients.iter_mut() {
                beat(&mut group, client, &topics);
                beats += 1;
            }
        }
        let per_s = beats as f64 / started.elapsed().as_secs_f64();
        // One more member: the CPU time until every member has settled again.
        clients.push(client("latecomer".into()));
        let rebalance = Instant::now();
        settle(&mut group, &mut clients, &topics);
        let rebalance_ms = rebalance.elapsed().as_secs_f64() * 1000.0;
        let active: usize = clients.iter().map(|c| c.owned.active.len()).sum();
        assert_eq!(active, tasks, "settled again");
        println!(
            "{members:>5} members: {per_s:>10.0} heartbeats/s; a join settles in {rebalance_ms:.1} ms of CPU"
        );
        rows.push(
            json!({"members": members, "heartbeats_per_s": per_s.round(),
            "join_settle_cpu_ms": (rebalance_ms * 10.0).round() / 10.0}),
        );
    }
    let doc = json!({
        "tool": "cargo bench -p shoal-shards --bench streams_heartbeat",
        "workload": {
            "what": "StreamsGroup::expire, ::heartbeat and ::take_change (as the shard's registry calls them) on one thread, the group settled (every member running its tasks, each member its own process); then one member joins and every member heartbeats until settled (6 rounds)",
            "topology": format!("2 subtopologies, each reading one topic of {PARTITIONS} partitions: {tasks} tasks"),
            "standby_replicas": STANDBYS,
            "cores": "1 (the bench's one thread; the broker runs this on the group's shard)",
        },
        "results": rows,
    });
    perf_results::write("streams-heartbeat", &doc);
}
