//! Recovery from real files: snapshots plus the log after them rebuild the exact state, a
//! torn log tail is cut at the last whole record, and any other damage refuses the start
//! with a message naming the file.

use std::path::Path;

use shoal_coordinator::commands::*;
use shoal_coordinator::*;
use shoal_metalog::*;

mod support;
use support::{create_topic, produce, run, view};

fn temp_dir() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("shoal-recovery-{}", uuid::Uuid::new_v4()))
}

async fn open(dir: &Path, snapshot_log_bytes: u64) -> CoordinatorCore {
    CoordinatorCore::open(dir, view(), snapshot_log_bytes)
        .await
        .unwrap()
}

#[test]
fn snapshots_and_the_log_after_them_rebuild_the_same_state() {
    let dir = temp_dir();
    let d = dir.clone();
    run(move || async move {
        // A 4 KiB threshold forces several snapshots and log generations.
        let mut core = open(&d, 4096).await;
        let topic = create_topic(&mut core).await;
        produce(&mut core, topic, 50).await;
        let delete = DeleteRecords {
            partitions: vec![(
                TopicPartition {
                    topic_id: topic,
                    partition: 1,
                },
                20,
            )],
        };
        core.run(delete).await.unwrap();
        produce(&mut core, topic, 3).await;
        let before = core.state().clone();
        drop(core);
        let snapshots = std::fs::read_dir(&d)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_str()
                    .unwrap()
                    .starts_with("snapshot-")
            })
            .count();
        assert_eq!(
            snapshots, 2,
            "only the newest snapshot and the one before it are kept"
        );
        let reopened = open(&d, 4096).await;
        assert_eq!(reopened.state(), &before);
        assert_eq!(
            reopened.state().log_start_offset(TopicPartition {
                topic_id: topic,
                partition: 1
            }),
            Some(20)
        );
    });
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_torn_log_tail_is_truncated_and_the_rest_recovered() {
    let dir = temp_dir();
    let d = dir.clone();
    run(move || async move {
        let mut core = open(&d, u64::MAX).await;
        let topic = create_topic(&mut core).await;
        produce(&mut core, topic, 5).await;
        let before = core.state().clone();
        drop(core);
        let log = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|x| x == "log"))
            .unwrap();
        let whole = std::fs::metadata(&log).unwrap().len();
        // A crash mid-append: half a frame of garbage after the last whole record.
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        std::io::Write::write_all(&mut f, &[0, 0, 1, 0, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3]).unwrap();
        drop(f);
        let mut reopened = open(&d, u64::MAX).await;
        assert_eq!(reopened.state(), &before);
        assert_eq!(
            std::fs::metadata(&log).unwrap().len(),
            whole,
            "the tail was cut"
        );
        produce(&mut reopened, topic, 1).await;
        let after = reopened.state().clone();
        drop(reopened);
        assert_eq!(
            open(&d, u64::MAX).await.state(),
            &after,
            "appends after the cut replay"
        );
    });
    std::fs::remove_dir_all(dir).unwrap();
}

async fn try_open(dir: &Path) -> Result<CoordinatorCore, MetaLogError> {
    CoordinatorCore::open(dir, view(), 4096).await
}

fn files(dir: &Path, prefix: &str) -> Vec<std::path::PathBuf> {
    let mut found: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with(prefix))
        .collect();
    found.sort();
    found
}

fn flip_byte(path: &Path, at: u64) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at as usize] ^= 0x04;
    std::fs::write(path, bytes).unwrap();
}

/// Runs `damage` on a directory with several generations and expects the start refused with
/// a message holding each of `expected`.
fn refused_after(damage: impl FnOnce(&Path) + Send + 'static, expected: &'static [&'static str]) {
    let dir = temp_dir();
    let d = dir.clone();
    run(move || async move {
        let mut core = open(&d, 4096).await;
        let topic = create_topic(&mut core).await;
        produce(&mut core, topic, 40).await;
        drop(core);
        damage(&d);
        let message = match try_open(&d).await {
            Ok(_) => panic!("a damaged directory was started from"),
            Err(e) => e.to_string(),
        };
        for part in expected {
            assert!(message.contains(part), "{part:?} not in: {message}");
        }
    });
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_flipped_bit_in_the_middle_of_the_newest_log_refuses_the_start() {
    refused_after(
        |d| {
            let log = files(d, "metadata-").pop().unwrap();
            flip_byte(&log, 20);
        },
        &[
            "is damaged at byte 0",
            "whole records follow it",
            "--accept-loss",
        ],
    );
}

#[test]
fn damage_at_the_end_of_an_older_log_refuses_the_start() {
    refused_after(
        |d| {
            // Without the newest snapshot, recovery replays the two newest logs.
            std::fs::remove_file(files(d, "snapshot-").pop().unwrap()).unwrap();
            let logs = files(d, "metadata-");
            let older = &logs[logs.len() - 2];
            let len = std::fs::metadata(older).unwrap().len();
            flip_byte(older, len - 1);
        },
        &["it is not the newest log"],
    );
}

#[test]
fn a_flipped_bit_in_the_newest_snapshot_refuses_and_names_the_lossless_way_out() {
    refused_after(
        |d| {
            let snapshot = files(d, "snapshot-").pop().unwrap();
            flip_byte(&snapshot, 30);
        },
        &[
            "cannot be read",
            "Nothing is lost",
            "shoal repair --data-dir",
        ],
    );
}

#[test]
fn a_missing_log_generation_refuses_the_start() {
    refused_after(
        |d| {
            let logs = files(d, "metadata-");
            let snapshot = files(d, "snapshot-").pop().unwrap();
            let newest_snapshot_generation = snapshot
                .file_stem()
                .unwrap()
                .to_str()
                .unwrap()
                .trim_start_matches("snapshot-")
                .to_string();
            let first_after = logs
                .iter()
                .find(|l| l.to_str().unwrap().contains(&newest_snapshot_generation))
                .unwrap();
            std::fs::remove_file(first_after).unwrap();
        },
        &["is missing"],
    );
}

#[test]
fn an_unknown_format_refuses_the_start() {
    refused_after(
        |d| std::fs::write(d.join("FORMAT"), "shoal-metadata 99\n").unwrap(),
        &["shoal-metadata 99", "this build reads"],
    );
}

#[test]
fn a_whole_record_this_build_cannot_decode_refuses_the_start() {
    refused_after(
        |d| {
            let log = files(d, "metadata-").pop().unwrap();
            let payload = [0xEEu8, 0, 1];
            let mut frame = (payload.len() as u32).to_be_bytes().to_vec();
            frame.extend_from_slice(&crc32c::crc32c(&payload).to_be_bytes());
            frame.extend_from_slice(&payload);
            let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
            std::io::Write::write_all(&mut f, &frame).unwrap();
        },
        &["newer Shoal"],
    );
}

#[test]
fn repair_sets_a_damaged_snapshot_aside_and_loses_nothing() {
    let dir = temp_dir();
    let d = dir.clone();
    run(move || async move {
        let mut core = open(&d, 4096).await;
        let topic = create_topic(&mut core).await;
        produce(&mut core, topic, 40).await;
        let before = core.state().clone();
        drop(core);
        flip_byte(&files(&d, "snapshot-").pop().unwrap(), 30);
        let report = shoal_metalog::repair::repair(&d, false).await.unwrap();
        assert_eq!(report.records_lost, 0);
        assert_eq!(report.actions.len(), 1, "{:?}", report.actions);
        assert_eq!(files(&d.join("damaged"), "").len(), 1);
        assert_eq!(try_open(&d).await.unwrap().state(), &before);
    });
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn repair_cuts_a_damaged_log_only_when_the_loss_is_accepted() {
    let dir = temp_dir();
    let d = dir.clone();
    run(move || async move {
        let mut core = open(&d, u64::MAX).await;
        let topic = create_topic(&mut core).await;
        produce(&mut core, topic, 10).await;
        drop(core);
        let log = files(&d, "metadata-").pop().unwrap();
        let whole = std::fs::read(&log).unwrap();
        // Damage the third record of eleven (one topic, ten files).
        let third = {
            let mut at = 0usize;
            for _ in 0..2 {
                let len = u32::from_be_bytes(whole[at..at + 4].try_into().unwrap()) as usize;
                at += 8 + len;
            }
            at
        };
        flip_byte(&log, third as u64 + 12);
        let refused = shoal_metalog::repair::repair(&d, false)
            .await
            .unwrap_err()
            .to_string();
        assert!(refused.contains("--accept-loss"), "{refused}");
        assert_eq!(
            std::fs::read(&log).unwrap().len(),
            whole.len(),
            "nothing changed"
        );
        let report = shoal_metalog::repair::repair(&d, true).await.unwrap();
        assert_eq!(report.records_lost, 8, "{:?}", report.actions);
        assert_eq!(std::fs::read(&log).unwrap(), whole[..third]);
        let kept = files(&d.join("damaged"), "").pop().unwrap();
        assert_eq!(std::fs::read(kept).unwrap().len(), whole.len());
        let reopened = try_open(&d).await.unwrap();
        let partition = TopicPartition {
            topic_id: topic,
            partition: 0,
        };
        assert!(reopened.state().high_watermark(partition).is_some());
    });
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_directory_from_before_formats_were_recorded_refuses_the_start() {
    refused_after(
        |d| std::fs::remove_file(d.join("FORMAT")).unwrap(),
        &["none recorded", "does not migrate"],
    );
}
