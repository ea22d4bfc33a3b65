//! Brokers of a cluster sharing one coordinator log (a real PostgreSQL started by the test)
//! under the faults a paused or stalled broker brings: a group write decided before the group
//! moved is refused; a broker that has not heard of another's writes still answers fresh reads
//! with them; a broker stalled while holding the log's lock holds up the others for about
//! `SHARED_LOCK_IDLE_MAX`, loses its round, and serves on.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use glommio::LocalExecutorBuilder;
use shoal_coordinator::command::Round;
use shoal_coordinator::commands::*;
use shoal_coordinator::*;
use shoal_metalog::postgres_log::{WriterRole, SHARED_LOCK_IDLE_MAX};
use shoal_metalog::*;
use shoal_pg::testing::{TestPostgres, PASSWORD};
use shoal_pg::PgConfig;

mod support;
use support::{create_topic, open_postgres, produce, run};

async fn open(config: &PgConfig, holder: &str) -> CoordinatorCore {
    open_postgres(config, holder, WriterRole::Shared, u64::MAX)
        .await
        .unwrap()
}

async fn claim(core: &mut CoordinatorCore, node_id: i32, incarnation: i64) -> GroupClaim {
    let command = ClaimGroup {
        group: "g".into(),
        node_id,
        incarnation,
    };
    core.run(command).await.unwrap().unwrap()
}

async fn commit(
    core: &mut CoordinatorCore,
    topic: uuid::Uuid,
    claim: GroupClaim,
    offset: i64,
) -> Option<ErrorKind> {
    let command = CommitOffsets {
        group: "g".into(),
        claim: Some(claim),
        offsets: vec![OffsetCommitEntry {
            partition: TopicPartition {
                topic_id: topic,
                partition: 0,
            },
            offset,
            leader_epoch: -1,
            metadata: String::new(),
        }],
    };
    core.run(command).await.unwrap()[0]
}

async fn committed(core: &mut CoordinatorCore, topic: uuid::Uuid) -> Option<i64> {
    let command = FetchOffsets {
        group: "g".into(),
        partitions: Some(vec![TopicPartition {
            topic_id: topic,
            partition: 0,
        }]),
    };
    let fetched = core.run(command).await.unwrap();
    fetched[0].1.as_ref().map(|stored| stored.offset)
}

async fn latest(core: &mut CoordinatorCore, topic: uuid::Uuid) -> String {
    let latest = ListOffsets {
        read_committed: false,
        partitions: vec![(
            TopicPartition {
                topic_id: topic,
                partition: 0,
            },
            -1,
        )],
    };
    format!("{:?}", core.run(latest).await.unwrap())
}

#[test]
fn a_group_write_decided_before_the_group_moved_is_refused() {
    let server = TestPostgres::start();
    let config = PgConfig::from_url(&server.url(), Some(PASSWORD.into())).unwrap();
    run(move || async move {
        let mut a = open(&config, "a").await;
        let mut b = open(&config, "b").await;
        let topic = create_topic(&mut a).await;
        let a_claim = claim(&mut a, 1, 11).await;
        assert_eq!(commit(&mut a, topic, a_claim, 8150).await, None);
        // A is paused; B takes the group over and its members commit further.
        let b_claim = claim(&mut b, 2, 22).await;
        assert_eq!(b_claim.epoch, a_claim.epoch + 1);
        assert_eq!(commit(&mut b, topic, b_claim, 8250).await, None);
        // A wakes with a commit it read before the pause: the log refuses it.
        assert_eq!(
            commit(&mut a, topic, a_claim, 6800).await,
            Some(ErrorKind::NotCoordinator)
        );
        assert_eq!(committed(&mut b, topic).await, Some(8250));
        // A claims the group back (its view says it coordinates): B's claim is then stale.
        let again = claim(&mut a, 1, 11).await;
        assert_eq!(again.epoch, b_claim.epoch + 1);
        assert_eq!(
            commit(&mut b, topic, b_claim, 8300).await,
            Some(ErrorKind::NotCoordinator)
        );
        assert_eq!(commit(&mut a, topic, again, 8400).await, None);
        // A restarted broker (a new incarnation) holds none of its old claims, even at an
        // epoch that a deletion restarted.
        let delete = DeleteGroup {
            group: "g".into(),
            claim: again,
        };
        assert_eq!(a.run(delete).await.unwrap(), Ok(true));
        let fresh = claim(&mut b, 1, 12).await;
        assert_eq!(fresh.epoch, 1);
        let old = GroupClaim { epoch: 1, ..again };
        assert_eq!(
            commit(&mut a, topic, old, 1).await,
            Some(ErrorKind::NotCoordinator)
        );
        // Claims survive a reload from the log.
        let c = open(&config, "c").await;
        assert_eq!(c.state().group_claim("g"), Some(fresh));
    });
}

#[test]
fn a_broker_that_has_not_heard_of_a_commit_still_reads_it() {
    let server = TestPostgres::start();
    let config = PgConfig::from_url(&server.url(), Some(PASSWORD.into())).unwrap();
    run(move || async move {
        let mut a = open(&config, "a").await;
        let mut b = open(&config, "b").await;
        let topic = create_topic(&mut a).await;
        let b_claim = claim(&mut b, 2, 22).await;
        assert_eq!(commit(&mut b, topic, b_claim, 8250).await, None);
        produce(&mut b, topic, 2).await;
        // A is told of nothing (no notifications in this test): its fresh reads read the log.
        assert_eq!(committed(&mut a, topic).await, Some(8250));
        assert_eq!(latest(&mut a, topic).await, latest(&mut b, topic).await);
        assert_eq!(a.state(), b.state());
    });
}

/// A write that holds the round's lock for `0` (as a paused or starved broker would) by
/// blocking its thread while the round is decided.
#[derive(Debug)]
struct Stall(Duration);

impl Command for Stall {
    type Reply = ();
    const WRITE: bool = true;

    fn run(self, _round: &mut Round<'_>) {
        std::thread::sleep(self.0);
    }
}

#[test]
fn a_broker_stalled_holding_the_log_loses_its_round_without_holding_up_the_others() {
    let server = TestPostgres::start();
    let config = PgConfig::from_url(&server.url(), Some(PASSWORD.into())).unwrap();
    let (topic_tx, topic_rx) = mpsc::channel();
    let (stalled_tx, stalled_rx) = mpsc::channel();
    let (after_tx, after_rx) = mpsc::channel();
    let a_config = config.clone();
    let a = LocalExecutorBuilder::default()
        .io_memory(1 << 20)
        .spawn(move || async move {
            let mut a = open(&a_config, "a").await;
            let topic = create_topic(&mut a).await;
            topic_tx.send(topic).unwrap();
            let stall = Stall(SHARED_LOCK_IDLE_MAX * 3);
            let commit = support::commit_file(topic, "wal/a-lost");
            stalled_tx.send(()).unwrap();
            let replies = a
                .process(vec![Envelope::new(stall), Envelope::new(commit)])
                .await
                .expect("a lost round is not an error the broker stops on");
            assert!(
                replies
                    .into_iter()
                    .all(|reply| reply.into_reply::<Stall>().is_none()),
                "the lost round's commands are answered unavailable"
            );
            // A serves on, on the log's state.
            let after = a.run(support::commit_file(topic, "wal/a-after")).await;
            assert_eq!(after.expect("A serves after losing a round")[0].error, None);
            after_tx.send(()).unwrap();
            (latest(&mut a, topic).await, a.state().batch_count())
        })
        .unwrap();
    let b = LocalExecutorBuilder::default()
        .io_memory(1 << 20)
        .spawn(move || async move {
            let mut b = open(&config, "b").await;
            let topic = topic_rx.recv().unwrap();
            stalled_rx.recv().unwrap();
            // A holds (or is about to hold) the lock, and stalls.
            glommio::timer::sleep(Duration::from_millis(300)).await;
            let started = Instant::now();
            let won = b.run(support::commit_file(topic, "wal/b-won")).await;
            let waited = started.elapsed();
            assert_eq!(won.unwrap()[0].error, None);
            after_rx.recv().unwrap();
            b.catch_up().await.unwrap();
            (waited, latest(&mut b, topic).await, b.state().batch_count())
        })
        .unwrap();
    let (a_latest, a_batches) = a.join().unwrap();
    let (waited, b_latest, b_batches) = b.join().unwrap();
    println!("B waited {waited:?} behind the stalled broker");
    assert!(
        waited < SHARED_LOCK_IDLE_MAX * 2,
        "B's commit waited {waited:?} for the stalled broker's lock"
    );
    // B's batch and A's later one (A's round read B's row first): the lost round's batch is
    // in neither broker's state.
    assert_eq!((a_latest, a_batches), (b_latest, b_batches));
    assert_eq!(a_batches, 2);
}
