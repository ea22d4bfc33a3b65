//! Fetch long polls: woken by a commit on the owning shard, or answered at the deadline.

use std::time::{Duration, Instant};

use shoal_coordinator::TopicPartition;
use shoal_protocol::messages::{FetchRequest, ProduceRequest};

use super::*;
use crate::context::ClientInfo;
use crate::handlers::{fetch, produce};

const FETCH_VERSION: i16 = 12;

#[test]
fn a_long_poll_wakes_when_a_commit_lands_on_either_shard() {
    let dir = temp_dir("long-poll");
    run_broker(test_config(&dir), |broker| async move {
        let topic_id = create_topic(&broker, "tail", 16).await;
        for owner in [0, 1] {
            let partition = (0..16)
                .find(|&p| {
                    broker.shard.owner_of(&TopicPartition {
                        topic_id,
                        partition: p,
                    }) == owner
                })
                .expect("each shard owns some of 16 partitions");
            let poller = broker.clone();
            let started = Instant::now();
            let poll = glommio::spawn_local(async move {
                let client = ClientInfo::default();
                let request = fetch_request("tail", partition, 0, 10_000);
                fetch::handle(
                    &call::<FetchRequest>(&poller, FETCH_VERSION, &client),
                    request,
                )
                .await
            });
            glommio::timer::sleep(Duration::from_millis(100)).await;
            let client = ClientInfo::default();
            let write = produce_request("tail", partition, record_batch(&[b"wake up"]));
            produce::handle(&call::<ProduceRequest>(&broker, 9, &client), write).await;
            let (error, hwm, records) = fetched(&poll.await);
            let waited = started.elapsed();
            assert_eq!((error, hwm), (0, 1), "shard {owner}");
            assert!(records.windows(7).any(|w| w == b"wake up"));
            // Woken by the commit, far before the 10 s deadline.
            assert!(
                waited < Duration::from_secs(5),
                "{waited:?} on shard {owner}"
            );
        }
    });
}

#[test]
fn a_long_poll_with_nothing_to_read_answers_at_its_deadline() {
    let dir = temp_dir("deadline");
    run_broker(test_config(&dir), |broker| async move {
        create_topic(&broker, "quiet", 2).await;
        let client = ClientInfo::default();
        let started = Instant::now();
        let request = fetch_request("quiet", 1, 0, 300);
        let (error, hwm, records) = fetched(
            &fetch::handle(
                &call::<FetchRequest>(&broker, FETCH_VERSION, &client),
                request,
            )
            .await,
        );
        let waited = started.elapsed();
        assert_eq!((error, hwm, records.len()), (0, 0, 0));
        assert!(waited >= Duration::from_millis(300), "{waited:?}");
        assert!(waited < Duration::from_secs(3), "{waited:?}");
    });
}
