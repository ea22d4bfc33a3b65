//! The coordinator on PostgreSQL (a real server started by the test): snapshots and the rows
//! after them rebuild the exact state, a broker that takes the writer role fences the one
//! before it, and an append waits out a PostgreSQL restart without losing or doubling a row.

use std::sync::Arc;
use std::time::Duration;

use shoal_coordinator::commands::*;
use shoal_coordinator::*;
use shoal_metalog::postgres_log::WriterRole;
use shoal_metalog::*;
use shoal_pg::testing::{TestPostgres, PASSWORD};
use shoal_pg::{Param, PgConfig};

mod support;
use support::{create_topic, open_postgres, produce, run, snapshots_and_first_row};

fn config(server: &TestPostgres) -> PgConfig {
    PgConfig::from_url(&server.url(), Some(PASSWORD.into())).unwrap()
}

async fn open(config: &PgConfig, holder: &str, snapshot_log_bytes: u64) -> CoordinatorCore {
    open_postgres(config, holder, WriterRole::Sole, snapshot_log_bytes)
        .await
        .unwrap()
}

#[test]
fn snapshots_and_the_rows_after_them_rebuild_the_same_state() {
    let server = TestPostgres::start();
    let config = config(&server);
    run(move || async move {
        // A 4 KiB threshold forces several snapshots, each dropping the rows it covers.
        let mut core = open(&config, "a", 4096).await;
        let topic = create_topic(&mut core).await;
        produce(&mut core, topic, 50).await;
        let partition = TopicPartition {
            topic_id: topic,
            partition: 1,
        };
        let deleted = DeleteRecords {
            partitions: vec![(partition, 20)],
        };
        core.run(deleted).await.unwrap();
        produce(&mut core, topic, 3).await;
        let live = core.state().clone();
        assert!(live.batch_count() > 0);
        drop(core);
        let (snapshots, first_row) = snapshots_and_first_row(&config).await;
        assert_eq!(snapshots, 1, "older snapshots are dropped");
        assert!(first_row > 1, "rows a snapshot covers are dropped");
        let reopened = open(&config, "a", 4096).await;
        assert_eq!(reopened.state(), &live, "recovered from PostgreSQL exactly");
    });
}

#[test]
fn a_broker_taking_the_writer_role_fences_the_one_before() {
    let server = TestPostgres::start();
    let config = config(&server);
    run(move || async move {
        let mut first = open(&config, "broker-1", u64::MAX).await;
        let topic = create_topic(&mut first).await;
        produce(&mut first, topic, 3).await;
        let mut second = open(&config, "broker-2", u64::MAX).await;
        assert_eq!(
            second.state(),
            first.state(),
            "the new writer read everything"
        );
        let request = CreateTopic {
            name: "late".into(),
            partitions: 1,
            overrides: Default::default(),
        };
        let refused = first.run(request).await.expect_err("fenced");
        assert!(matches!(refused, MetaLogError::Fenced(_)), "{refused}");
        produce(&mut second, topic, 2).await;
        let third = open(&config, "broker-3", u64::MAX).await;
        assert_eq!(
            third.state(),
            second.state(),
            "nothing of the fenced writer got in"
        );
    });
}

#[test]
fn an_append_waits_out_a_postgres_restart_and_is_written_once() {
    let server = Arc::new(TestPostgres::start());
    let config = config(&server);
    let s = server.clone();
    run(move || async move {
        let mut core = open(&config, "a", u64::MAX).await;
        let topic = create_topic(&mut core).await;
        s.stop();
        let restart = async {
            glommio::timer::sleep(Duration::from_millis(500)).await;
            s.start_server();
        };
        let commit = produce(&mut core, topic, 1);
        futures::join!(commit, restart);
        produce(&mut core, topic, 1).await;
        let live = core.state().clone();
        drop(core);
        let reopened = open(&config, "a", u64::MAX).await;
        assert_eq!(reopened.state(), &live);
        let offsets = reopened.state().batch_count();
        assert_eq!(
            offsets, 20,
            "two commits of 10 batches, none lost or doubled"
        );
    });
}

#[test]
fn a_snapshot_stored_in_parts_is_read_back_whole_and_a_missing_part_refuses_the_start() {
    let server = TestPostgres::start();
    let config = config(&server);
    run(move || async move {
        let mut core = open(&config, "a", 4096).await;
        let topic = create_topic(&mut core).await;
        produce(&mut core, topic, 30).await;
        let live = core.state().clone();
        drop(core);
        // Cut the newest snapshot into three parts, as a large one is stored.
        let mut db = shoal_pg::Connection::connect(&config).await.unwrap();
        let rows = db
            .query(
                "SELECT last_seq, bytes FROM coordinator_snapshots WHERE part = 0 \
                 ORDER BY last_seq DESC LIMIT 1",
                &[],
            )
            .await
            .unwrap();
        let last_seq = rows[0].i64(0).unwrap();
        let image = rows[0].bytes(1).unwrap().unwrap().clone();
        db.execute("DELETE FROM coordinator_snapshots", &[])
            .await
            .unwrap();
        let third = image.len().div_ceil(3);
        for (part, bytes) in image.chunks(third).enumerate() {
            db.execute(
                "INSERT INTO coordinator_snapshots (last_seq, part, parts, bytes, crc) \
                 VALUES ($1, $2, 3, $3, $4)",
                &[
                    Param::I64(last_seq),
                    Param::I32(part as i32),
                    Param::Bytes(bytes),
                    Param::I64(crc32c::crc32c(bytes) as i64),
                ],
            )
            .await
            .unwrap();
        }
        let reopened = open(&config, "a", u64::MAX).await;
        assert_eq!(reopened.state(), &live, "three parts make the whole image");
        drop(reopened);
        db.execute("DELETE FROM coordinator_snapshots WHERE part = 1", &[])
            .await
            .unwrap();
        let refused = open_postgres(&config, "a", WriterRole::Sole, u64::MAX)
            .await
            .err()
            .expect("a part is missing");
        assert!(
            refused.to_string().contains("part 1 of 3 is missing"),
            "{refused}"
        );
    });
}

#[test]
fn rows_after_one_that_never_committed_are_dropped_and_a_wider_gap_refuses_the_start() {
    let server = TestPostgres::start();
    let config = config(&server);
    run(move || async move {
        // Row 1 creates the topic; each produced file is one more row.
        let mut core = open(&config, "a", u64::MAX).await;
        let topic = create_topic(&mut core).await;
        produce(&mut core, topic, 3).await;
        let through_row_4 = core.state().clone();
        produce(&mut core, topic, 2).await;
        drop(core);
        // As a crash with rows 5 and 6 in flight leaves it when only 6 committed: 6 was
        // never acknowledged, since 5 was not.
        let mut db = shoal_pg::Connection::connect(&config).await.unwrap();
        db.execute("DELETE FROM coordinator_log WHERE seq = 5", &[])
            .await
            .unwrap();
        let mut reopened = open(&config, "a", u64::MAX).await;
        assert_eq!(reopened.state(), &through_row_4);
        let rows = db
            .query("SELECT max(seq) FROM coordinator_log", &[])
            .await
            .unwrap();
        assert_eq!(rows[0].i64(0).unwrap(), 4, "row 6 is gone");
        // Appends go on from row 5, and a restart reads them back.
        produce(&mut reopened, topic, 20).await;
        let live = reopened.state().clone();
        drop(reopened);
        assert_eq!(open(&config, "a", u64::MAX).await.state(), &live);
        // A row missing with more after it than any writer keeps in flight is damage.
        db.execute("DELETE FROM coordinator_log WHERE seq = 6", &[])
            .await
            .unwrap();
        let refused = open_postgres(&config, "a", WriterRole::Sole, u64::MAX)
            .await
            .err()
            .expect("rows are missing");
        assert!(refused.to_string().contains("no row 6"), "{refused}");
    });
}
