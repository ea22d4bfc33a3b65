//! Brokers of a cluster sharing one coordinator log in PostgreSQL (a real server started by
//! the test): each round is decided on every row the others wrote, idempotent retries are
//! recognised whichever broker they reach, and a broker that fell behind a snapshot starts
//! from it.

use shoal_coordinator::commands::*;
use shoal_metalog::postgres_log::WriterRole;
use shoal_metalog::*;
use shoal_pg::testing::{TestPostgres, PASSWORD};
use shoal_pg::PgConfig;

mod support;
use support::{commit_file, create_topic, open_postgres, produce, run, snapshots_and_first_row};

async fn open(config: &PgConfig, holder: &str, snapshot_log_bytes: u64) -> CoordinatorCore {
    open_postgres(config, holder, WriterRole::Shared, snapshot_log_bytes)
        .await
        .unwrap()
}

/// A batch of 4 records from idempotent producer 9 at `sequence`.
fn idempotent(topic: uuid::Uuid, key: &str, sequence: i32) -> CommitFile {
    let mut file = commit_file(topic, key);
    let batch = &mut file.batches[0];
    (batch.offset_count, batch.producer_id, batch.producer_epoch) = (4, 9, 0);
    batch.base_sequence = sequence;
    file
}

#[test]
fn brokers_sharing_the_log_decide_on_each_others_writes() {
    let server = TestPostgres::start();
    let config = PgConfig::from_url(&server.url(), Some(PASSWORD.into())).unwrap();
    run(move || async move {
        let mut a = open(&config, "a", u64::MAX).await;
        let mut b = open(&config, "b", u64::MAX).await;
        let topic = create_topic(&mut a).await;
        // B has not read the topic yet; its round reads A's row first.
        let first = b.run(idempotent(topic, "wal/b-0", 0)).await.unwrap();
        assert_eq!((first[0].error, first[0].base_offset), (None, 0));
        let second = a.run(idempotent(topic, "wal/a-1", 4)).await.unwrap();
        assert_eq!(
            (second[0].error, second[0].base_offset),
            (None, 4),
            "A continues after B's batch"
        );
        // The producer's retry of sequence 4 reaches B: a duplicate, at the original offset.
        let retry = b.run(idempotent(topic, "wal/b-retry", 4)).await.unwrap();
        assert!(retry[0].is_duplicate);
        assert_eq!(retry[0].base_offset, 4);
        produce(&mut b, topic, 3).await;
        assert!(
            a.catch_up().await.unwrap(),
            "A reads B's rows between rounds"
        );
        assert_eq!(a.state(), b.state());
        assert!(!a.catch_up().await.unwrap(), "nothing new");
        let c = open(&config, "c", u64::MAX).await;
        assert_eq!(
            c.state(),
            a.state(),
            "a broker joining reads the same state"
        );
    });
}

#[test]
fn a_broker_behind_a_snapshot_starts_from_it() {
    let server = TestPostgres::start();
    let config = PgConfig::from_url(&server.url(), Some(PASSWORD.into())).unwrap();
    run(move || async move {
        // A snapshots every 4 KiB, dropping rows B has not read.
        let mut a = open(&config, "a", 4096).await;
        let mut b = open(&config, "b", u64::MAX).await;
        let topic = create_topic(&mut a).await;
        produce(&mut a, topic, 40).await;
        let (snapshots, first_row) = snapshots_and_first_row(&config).await;
        assert!(snapshots >= 1);
        assert!(first_row > 2, "rows B needs are gone");
        assert!(b.catch_up().await.unwrap());
        assert_eq!(b.state(), a.state());
        // And B writes on from there.
        produce(&mut b, topic, 2).await;
        a.catch_up().await.unwrap();
        assert_eq!(a.state(), b.state());
    });
}
