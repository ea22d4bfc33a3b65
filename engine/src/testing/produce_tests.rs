//! The produce pipeline through the Produce handler: order under back-pressure, a failed
//! upload, what shutdown does with buffered writes, an idle shard not waiting for the
//! commit interval, and closed-loop producers' writes sharing objects.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use shoal_coordinator::commands::ListOffsets;
use shoal_coordinator::{TopicPartition, LATEST_TIMESTAMP};
use shoal_protocol::messages::{FetchRequest, ProduceRequest};

use super::*;
use crate::context::{Broker, ClientInfo};
use crate::handlers::{fetch, produce};

const PRODUCE_VERSION: i16 = 9;
const STORAGE_ERROR: i16 = 56;

/// A partition of `topic_id` that shard `owner` owns.
fn partition_owned_by(broker: &Broker, topic_id: uuid::Uuid, owner: usize) -> i32 {
    (0..64)
        .find(|&partition| {
            broker.shard.owner_of(&TopicPartition {
                topic_id,
                partition,
            }) == owner
        })
        .expect("some partition of 64 is owned by each shard")
}

async fn produce_one(broker: &Broker, topic: &str, partition: i32, value: &[u8]) -> (i16, i64) {
    let client = ClientInfo::default();
    let request = produce_request(topic, partition, record_batch(&[value]));
    produced(
        &produce::handle(
            &call::<ProduceRequest>(broker, PRODUCE_VERSION, &client),
            request,
        )
        .await,
    )
}

async fn high_watermark(broker: &Broker, topic_id: uuid::Uuid, partition: i32) -> i64 {
    let tp = TopicPartition {
        topic_id,
        partition,
    };
    let lookup = ListOffsets {
        read_committed: false,
        partitions: vec![(tp, LATEST_TIMESTAMP)],
    };
    broker.shard.coordinator.run(lookup).await.unwrap()[0].offset
}

#[test]
fn writes_to_a_partition_commit_in_arrival_order_under_back_pressure() {
    let dir = temp_dir("order");
    let mut config = test_config(&dir);
    // Tiny buffers and one upload slot: most writes wait for a slot or a full queue.
    config.produce.commit_interval_ms = 50;
    config.produce.buffer_max_bytes = 2048;
    config.produce.uploads_in_flight_max = 1;
    config.shards.queue_depth = 2;
    run_broker(config, |broker| async move {
        let topic_id = create_topic(&broker, "ordered", 64).await;
        for owner in [0, 1] {
            let partition = partition_owned_by(&broker, topic_id, owner);
            let offsets = Rc::new(RefCell::new(vec![-1; 120]));
            let writes: Vec<_> = (0..120)
                .map(|i| {
                    let (broker, offsets) = (broker.clone(), offsets.clone());
                    glommio::spawn_local(async move {
                        let value = format!("{i:0200}");
                        let (error, offset) =
                            produce_one(&broker, "ordered", partition, value.as_bytes()).await;
                        assert_eq!(error, 0);
                        offsets.borrow_mut()[i] = offset;
                    })
                })
                .collect();
            for write in writes {
                write.await;
            }
            // Sent in order 0..120, so offsets 0..120 in that order.
            assert_eq!(
                *offsets.borrow(),
                (0..120).collect::<Vec<i64>>(),
                "shard {owner}"
            );
        }
    });
}

#[test]
fn a_failed_upload_answers_storage_error_and_the_next_write_succeeds() {
    let dir = temp_dir("upload");
    let mut config = test_config(&dir);
    config.produce.upload_attempts = 2;
    config.produce.upload_backoff_ms = 1;
    // The fault is made in the file layout's object directory.
    config.object_store.local_layout = crate::config::LocalLayoutKind::Files;
    let wal_dir = dir.join("objects").join("wal");
    run_broker(config, move |broker| {
        let wal_dir = wal_dir.clone();
        async move {
            let topic_id = create_topic(&broker, "fragile", 64).await;
            let partition = partition_owned_by(&broker, topic_id, 0);
            // A file where the object directory should be: every put fails.
            std::fs::remove_dir_all(&wal_dir).ok();
            std::fs::write(&wal_dir, b"not a directory").unwrap();
            let (error, _) = produce_one(&broker, "fragile", partition, b"lost").await;
            assert_eq!(error, STORAGE_ERROR);
            assert_eq!(broker.shard.metrics.counters.wal_upload_failures.get(), 1);
            assert_eq!(high_watermark(&broker, topic_id, partition).await, 0);

            std::fs::remove_file(&wal_dir).unwrap();
            let (error, offset) = produce_one(&broker, "fragile", partition, b"kept").await;
            assert_eq!((error, offset), (0, 0), "the failed write took no offset");
            assert_eq!(high_watermark(&broker, topic_id, partition).await, 1);
        }
    });
}

#[test]
fn an_idle_shard_commits_a_write_at_once_and_gathers_the_next_while_busy() {
    let dir = temp_dir("idle");
    let mut config = test_config(&dir);
    // An interval no test waits for: only rotation on idle can answer in time.
    config.produce.commit_interval_ms = 60_000;
    run_broker(config, |broker| async move {
        let topic_id = create_topic(&broker, "prompt", 64).await;
        let partition = partition_owned_by(&broker, topic_id, 0);
        let answered = shoal_net::within(
            Duration::from_secs(10),
            produce_one(&broker, "prompt", partition, b"alone"),
        )
        .await;
        assert_eq!(
            answered,
            Some((0, 0)),
            "answered without waiting for the interval"
        );
        // Writes that arrive together while one object is in flight share the next object.
        let writes: Vec<_> = (0..20)
            .map(|i| {
                let broker = broker.clone();
                glommio::spawn_local(async move {
                    produce_one(&broker, "prompt", partition, format!("w{i}").as_bytes()).await
                })
            })
            .collect();
        let answers = shoal_net::within(Duration::from_secs(10), futures::future::join_all(writes))
            .await
            .expect("all answered without waiting for the interval");
        assert!(answers.iter().all(|(error, _)| *error == 0));
        let objects = broker.shard.metrics.counters.wal_objects_uploaded.get();
        assert!(
            objects < 1 + 20,
            "{objects} objects: writes that waited for a busy store were grouped"
        );
        assert_eq!(high_watermark(&broker, topic_id, partition).await, 21);
    });
}

/// Objects uploaded while `writers` closed-loop producers (each sends its next write on the
/// answer to its last, as the Java producer's in-flight requests do) write `each` records.
fn objects_for_closed_loop_writers(gather_returning_us: u64, writers: usize, each: usize) -> u64 {
    let dir = temp_dir("closed-loop");
    let mut config = test_config(&dir);
    // Only rotation on a free store can answer in time, never the interval's timer.
    config.produce.commit_interval_ms = 60_000;
    config.produce.gather_returning_us = gather_returning_us;
    let objects = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counted = objects.clone();
    run_broker(config, move |broker| {
        let counted = counted.clone();
        async move {
            let topic_id = create_topic(&broker, "looped", 64).await;
            let partition = partition_owned_by(&broker, topic_id, 0);
            let loops: Vec<_> = (0..writers)
                .map(|writer| {
                    let broker = broker.clone();
                    glommio::spawn_local(async move {
                        for i in 0..each {
                            let value = format!("{writer}-{i}");
                            let (error, _) =
                                produce_one(&broker, "looped", partition, value.as_bytes()).await;
                            assert_eq!(error, 0);
                        }
                    })
                })
                .collect();
            shoal_net::within(Duration::from_secs(30), futures::future::join_all(loops))
                .await
                .expect("every write answered without waiting for the interval");
            let written = (writers * each) as i64;
            assert_eq!(high_watermark(&broker, topic_id, partition).await, written);
            let uploaded = broker.shard.metrics.counters.wal_objects_uploaded.get();
            counted.store(uploaded, std::sync::atomic::Ordering::Relaxed);
        }
    });
    objects.load(std::sync::atomic::Ordering::Relaxed)
}

#[test]
fn a_closed_loop_window_of_writes_shares_one_object_per_round() {
    // Five writers, as the Java producer's five requests in flight on one partition.
    let (writers, each) = (5, 20);
    // A wait no test machine's scheduling comes near: the returning writes always make it.
    let gathered = objects_for_closed_loop_writers(50_000, writers, each);
    assert!(
        gathered <= (each + 3) as u64,
        "{gathered} objects for {each} rounds of {writers} writes: the answered writers' next \
         writes should join the ones waiting"
    );
    // Without the wait the window splits in two and objects alternate between the halves.
    let split = objects_for_closed_loop_writers(0, writers, each);
    assert!(
        split > gathered + (each / 2) as u64,
        "{split} objects without waiting for returning writes, {gathered} with"
    );
}

#[test]
fn shutdown_commits_what_is_buffered_and_it_survives_a_restart() {
    let dir = temp_dir("drain");
    let mut config = test_config(&dir);
    // Nothing rotates on its own during the test: only the drain commits.
    config.produce.commit_interval_ms = 60_000;
    config.produce.rotate_when_idle = false;
    run_broker(config.clone(), |broker| async move {
        let topic_id = create_topic(&broker, "drained", 1).await;
        let writer = broker.clone();
        glommio::spawn_local(async move { produce_one(&writer, "drained", 0, b"buffered").await })
            .detach();
        // The write waits in the buffer; stop the broker under it.
        glommio::timer::sleep(Duration::from_millis(50)).await;
        assert_eq!(high_watermark(&broker, topic_id, 0).await, 0);
    });
    run_broker(config, |broker| async move {
        let topic_id = broker.shard.topics.load().by_name("drained").unwrap().id;
        assert_eq!(high_watermark(&broker, topic_id, 0).await, 1);
        let client = ClientInfo::default();
        let fetch = fetch_request("drained", 0, 0, 0);
        let response = fetch::handle(&call::<FetchRequest>(&broker, 12, &client), fetch).await;
        let (error, hwm, records) = fetched(&response);
        assert_eq!((error, hwm), (0, 1));
        assert!(records.windows(8).any(|w| w == b"buffered"));
    });
}
