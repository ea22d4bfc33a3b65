use std::path::PathBuf;

use bytes::Bytes;
use glommio::LocalExecutorBuilder;

use super::index::segment_path;
use super::*;

fn temp_root() -> PathBuf {
    std::env::temp_dir().join(format!("shoal-segments-test-{}", uuid::Uuid::new_v4()))
}

fn run(test: impl FnOnce() -> futures::future::LocalBoxFuture<'static, ()> + Send + 'static) {
    LocalExecutorBuilder::default()
        .io_memory(1 << 20)
        .spawn(test)
        .unwrap()
        .join()
        .unwrap();
}

fn object(seed: u32, len: usize) -> Bytes {
    (0..len as u32)
        .map(|i| ((i * 7 + seed) % 251) as u8)
        .collect::<Vec<_>>()
        .into()
}

/// Gives the spare segment being prepared in the background time to be created.
async fn spare_prepared() {
    glommio::timer::sleep(std::time::Duration::from_millis(200)).await;
}

fn segment_files(root: &std::path::Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(SEGMENTS_DIR))
        .map(|entries| entries.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

#[test]
fn objects_put_together_read_back_and_survive_a_reopen() {
    let root = temp_root();
    let dir = root.clone();
    run(move || {
        Box::pin(async move {
            {
                let segments = Segments::open(&dir, Some(1 << 20)).unwrap();
                // Concurrent puts are committed in groups.
                let puts = (0..20u32).map(|i| {
                    let segments = &segments;
                    async move {
                        segments
                            .put(&format!("wal/{i}"), &object(i, 1000 + 97 * i as usize))
                            .await
                    }
                });
                for outcome in futures::future::join_all(puts).await {
                    outcome.unwrap();
                }
                let got = segments
                    .get_range("wal/7", 100, 500)
                    .await
                    .unwrap()
                    .unwrap();
                assert_eq!(got, object(7, 1679).slice(100..600));
                assert_eq!(segments.size("wal/7"), Some(1679));
                assert!(segments
                    .get_range("wal/missing", 0, 1)
                    .await
                    .unwrap()
                    .is_none());
                assert!(matches!(
                    segments.get_range("wal/7", 1600, 100).await,
                    Err(WalError::ShortObject { .. })
                ));
                assert!(segments.delete("wal/3").await);
                assert!(!segments.delete("wal/3").await);
                assert_eq!(segments.list("wal").len(), 19);
                assert!(segments.list("other").is_empty());
            }
        })
    });
    // Every handle dropped with the executor (the spare segment's creation, still running
    // after the store is dropped, holds the index too): the next open reads the segments
    // again. The deleted object reappears (its entry is still in the segment) and is an
    // orphan then.
    let dir = root.clone();
    run(move || {
        Box::pin(async move {
            let segments = Segments::open(&dir, None).unwrap();
            assert_eq!(segments.list("wal").len(), 20);
            for i in 0..20u32 {
                let len = 1000 + 97 * i as usize;
                let got = segments
                    .get_range(&format!("wal/{i}"), 0, len)
                    .await
                    .unwrap()
                    .unwrap();
                assert_eq!(got, object(i, len), "object {i}");
            }
        })
    });
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn full_segments_roll_over_and_an_emptied_sealed_segment_is_deleted() {
    let root = temp_root();
    let dir = root.clone();
    run(move || {
        Box::pin(async move {
            let segments = Segments::open(&dir, Some(1 << 20)).unwrap();
            // 300 KB objects: three fit in a 1 MiB segment, the fourth starts the next: the
            // spare prepared while the first filled (a new spare is prepared then).
            for i in 0..4u32 {
                segments
                    .put(&format!("wal/{i}"), &object(i, 300_000))
                    .await
                    .unwrap();
            }
            // A larger object than a segment gets a segment of its own size; the spare waits.
            segments.put("wal/big", &object(9, 3 << 20)).await.unwrap();
            spare_prepared().await;
            let files = segment_files(&dir);
            assert_eq!(
                files.len(),
                4,
                "two full, the spare, the big one's: {files:?}"
            );
            assert_eq!(
                segments
                    .get_range("wal/big", (3 << 20) - 10, 10)
                    .await
                    .unwrap()
                    .unwrap(),
                object(9, 3 << 20).slice((3 << 20) - 10..)
            );
            for i in 0..3u32 {
                assert!(segments.delete(&format!("wal/{i}")).await);
            }
            assert_eq!(
                segment_files(&dir).len(),
                3,
                "the first segment is gone with its objects"
            );
            // wal/3's segment was sealed when the big object did not fit in it.
            assert!(segments.delete("wal/3").await);
            assert_eq!(segment_files(&dir).len(), 2);
            // The active segment stays, empty, for the next objects, and so does the spare.
            assert!(segments.delete("wal/big").await);
            assert_eq!(segment_files(&dir).len(), 2);
            assert!(segments.list("wal").is_empty());
            // The next object that does not fit takes the spare, and the emptied big segment
            // goes; the one after that takes the next spare.
            segments.put("wal/next", &object(3, 900_000)).await.unwrap();
            spare_prepared().await;
            assert_eq!(segment_files(&dir).len(), 2, "active and spare");
            segments
                .put("wal/after", &object(4, 900_000))
                .await
                .unwrap();
            spare_prepared().await;
            assert_eq!(
                segment_files(&dir).len(),
                3,
                "wal/next's, wal/after's, the spare"
            );
            assert_eq!(segments.list("wal").len(), 2);
        })
    });
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn a_segment_file_with_no_entry_is_deleted_by_a_writer_not_by_a_reader() {
    let root = temp_root();
    let empty = segment_path(&root.join(SEGMENTS_DIR), 7);
    std::fs::create_dir_all(root.join(SEGMENTS_DIR)).unwrap();
    std::fs::write(&empty, vec![0u8; 64 << 10]).unwrap();
    let (dir, file) = (root.clone(), empty.clone());
    run(move || {
        Box::pin(async move {
            {
                let reader = Segments::open(&dir, None).unwrap();
                assert!(reader.list("wal").is_empty());
            }
            assert!(file.exists(), "a reader deletes nothing");
            let writer = Segments::open(&dir, Some(1 << 20)).unwrap();
            writer.put("wal/a", &object(1, 100)).await.unwrap();
            assert!(!file.exists(), "the writer's first put deleted it");
            // New segments are numbered after every file found.
            assert!(segment_files(&dir).contains(&segment_path(&dir.join(SEGMENTS_DIR), 8)));
        })
    });
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn a_torn_entry_ends_its_segment_and_hides_nothing_acknowledged_before_it() {
    let root = temp_root();
    let dir = root.clone();
    run(move || {
        Box::pin(async move {
            let segments = Segments::open(&dir, Some(1 << 20)).unwrap();
            segments.put("wal/a", &object(1, 5000)).await.unwrap();
            segments.put("wal/b", &object(2, 5000)).await.unwrap();
        })
    });
    // Damage b's header, as a write torn by a crash would leave it.
    let segment = segment_path(&root.join(SEGMENTS_DIR), 0);
    let mut bytes = std::fs::read(&segment).unwrap();
    bytes[8192 + 10] ^= 0xff;
    std::fs::write(&segment, bytes).unwrap();
    let dir = root.clone();
    run(move || {
        Box::pin(async move {
            let segments = Segments::open(&dir, None).unwrap();
            let keys: Vec<String> = segments.list("wal").into_iter().map(|o| o.key).collect();
            assert_eq!(keys, vec!["wal/a".to_string()]);
            assert_eq!(
                segments.get_range("wal/a", 0, 5000).await.unwrap().unwrap(),
                object(1, 5000)
            );
        })
    });
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn a_put_dropped_mid_write_leaves_the_writer_usable_and_later_objects_readable_after_a_reopen() {
    let root = temp_root();
    let dir = root.clone();
    run(move || {
        Box::pin(async move {
            let segments = Segments::open(&dir, Some(1 << 20)).unwrap();
            segments.put("wal/before", &object(1, 5000)).await.unwrap();
            // Dropped once its write is under way (a cancelled upload): the select takes
            // both futures by value, so the losing put is dropped when it returns. (Whether the
            // kernel still completes that write cannot be chosen from here, so this does not
            // force the gap `SealIfAbandoned` guards against; it checks the writer carries on.)
            let abandoned = object(2, 200_000);
            let put = Box::pin(segments.put("wal/abandoned", &abandoned));
            let cancel = Box::pin(glommio::timer::sleep(std::time::Duration::from_micros(50)));
            if let futures::future::Either::Left((done, _)) =
                futures::future::select(put, cancel).await
            {
                done.unwrap(); // finished before the timer: nothing was abandoned
            }
            segments.put("wal/after", &object(3, 5000)).await.unwrap();
        })
    });
    let dir = root.clone();
    run(move || {
        Box::pin(async move {
            let segments = Segments::open(&dir, None).unwrap();
            let before = segments.get_range("wal/before", 0, 5000).await.unwrap();
            assert_eq!(before.unwrap(), object(1, 5000));
            let after = segments.get_range("wal/after", 0, 5000).await.unwrap();
            assert_eq!(
                after.unwrap(),
                object(3, 5000),
                "acknowledged after the abandoned put"
            );
        })
    });
    std::fs::remove_dir_all(root).unwrap();
}

/// Puts that find no room for a new segment are told why (the disk full, here its directory
/// gone), each of them: none reads a dropped answer as "commit abandoned".
#[test]
fn puts_with_no_segment_to_go_to_are_told_why() {
    let root = temp_root();
    let dir = root.clone();
    run(move || {
        Box::pin(async move {
            let segments = Segments::open(&dir, Some(1 << 20)).unwrap();
            segments.put("wal/first", &object(1, 5000)).await.unwrap();
            spare_prepared().await;
            std::fs::remove_dir_all(dir.join(SEGMENTS_DIR)).unwrap();
            // Larger than a segment: each needs a new file of its own, which cannot be made.
            let (big, bigger) = (object(2, 2 << 20), object(3, 3 << 20));
            let (a, b) = futures::join!(
                segments.put("wal/big", &big),
                segments.put("wal/bigger", &bigger)
            );
            for outcome in [a, b] {
                let error = outcome
                    .expect_err("no segment file can be made")
                    .to_string();
                assert!(error.contains("No such file"), "{error}");
                assert!(!error.contains("abandoned"), "{error}");
            }
        })
    });
    let _ = std::fs::remove_dir_all(root);
}

/// Files this process holds open that were deleted: their space is not yet freed.
fn open_deleted_files(root: &std::path::Path) -> usize {
    let root = root.display().to_string();
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .map(|target| target.display().to_string())
        .filter(|target| target.starts_with(&root) && target.ends_with("(deleted)"))
        .count()
}

#[test]
fn a_reader_keeps_segment_files_open_and_closes_those_another_handle_reclaims() {
    let root = temp_root();
    let dir = root.clone();
    run(move || {
        Box::pin(async move {
            // Two handles on one index, as two executors have: one writes, one only reads.
            let writer = Segments::open(&dir, Some(1 << 20)).unwrap();
            for i in 0..4u32 {
                let key = format!("wal/{i}");
                writer.put(&key, &object(i, 300_000)).await.unwrap();
            }
            let reader = Segments::open(&dir, None).unwrap();
            for _ in 0..3 {
                let got = reader.get_range("wal/1", 10, 20).await.unwrap().unwrap();
                assert_eq!(got, object(1, 300_000).slice(10..30));
            }
            assert_eq!(reader.open_files.len(), 1, "opened once, kept");
            // The first segment (wal/0..2) is emptied and deleted by the writer's handle: the
            // reader still holds its file until its next operation looks.
            for i in 0..3u32 {
                assert!(writer.delete(&format!("wal/{i}")).await);
            }
            assert_eq!(open_deleted_files(&dir), 1);
            assert!(reader.get_range("wal/1", 0, 1).await.unwrap().is_none());
            glommio::timer::sleep(std::time::Duration::from_millis(50)).await;
            assert_eq!(reader.open_files.len(), 0);
            assert_eq!(open_deleted_files(&dir), 0, "closed, its space freed");
            let got = reader.get_range("wal/3", 0, 5).await.unwrap().unwrap();
            assert_eq!(got, object(3, 300_000).slice(0..5));
        })
    });
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn each_lane_appends_to_segments_of_its_own_and_both_are_read_after_a_reopen() {
    let root = temp_root();
    let dir = root.clone();
    run(move || {
        Box::pin(async move {
            {
                let segments = Segments::open(&dir, Some(1 << 20)).unwrap();
                // Written at once: a background object does not join produce's group.
                // Larger than a background write: written in parts, one after the other.
                let (large, small) = (object(1, 2_600_000).into(), object(2, 1000).into());
                let (big, small) = futures::join!(
                    segments.put_in(WriteLane::Background, "merged/a", &large),
                    segments.put_in(WriteLane::Produce, "wal/b", &small),
                );
                big.unwrap();
                small.unwrap();
                let index = segments.index.as_ref().unwrap();
                let (a, b) = (
                    index.lookup("merged/a").unwrap(),
                    index.lookup("wal/b").unwrap(),
                );
                assert_ne!(a.segment, b.segment, "one segment per lane");
            }
            let segments = Segments::open(&dir, None).unwrap();
            let large = object(1, 2_600_000);
            let got = segments.get_range("merged/a", 0, 2_600_000).await.unwrap();
            assert_eq!(got.unwrap(), large);
            // Across the first part's end (the header is in the first part).
            let got = segments
                .get_range("merged/a", (1 << 20) - 100, 200)
                .await
                .unwrap();
            assert_eq!(got.unwrap(), large.slice((1 << 20) - 100..(1 << 20) + 100));
            let got = segments.get_range("wal/b", 0, 1000).await.unwrap();
            assert_eq!(got.unwrap(), object(2, 1000));
        })
    });
    std::fs::remove_dir_all(root).unwrap();
}
