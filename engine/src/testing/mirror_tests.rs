//! One mirror fetch round against a fake source cluster on a local socket: the batches land
//! at the source's offsets, the gap before them stays a gap, and the source's log start is
//! followed.

use bytes::{Bytes, BytesMut};
use glommio::net::TcpListener;
use shoal_coordinator::commands::{AddTopicsToMirror, CreateMirror, MirrorEvents};
use shoal_coordinator::{MirrorEvent, MirroredTopic};
use shoal_protocol::frame;
use shoal_protocol::messages::api_versions_response::ApiVersion;
use shoal_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use shoal_protocol::messages::{ApiKey, ApiVersionsResponse, FetchRequest, FetchResponse};
use shoal_wal::batch::{patch_base_offset, BatchHeader};

use super::*;
use crate::context::ClientInfo;
use crate::handlers::fetch;
use shoal_mirror_fetcher::fetch_round::fetch_round;
use shoal_mirror_fetcher::fetcher::owned_partitions;
use shoal_mirror_fetcher::session::Session;

const SOURCE_LOG_START: i64 = 5;

/// Two one-record batches at offsets 5 and 6, as the source stores them.
fn source_records() -> Bytes {
    let mut all = BytesMut::new();
    for (offset, value) in [(5i64, &b"five"[..]), (6, &b"six"[..])] {
        let mut batch = BytesMut::from(&record_batch(&[value])[..]);
        // The base offset is outside the CRC: the source's offsets, as a broker patches them.
        patch_base_offset(&mut batch, offset);
        all.extend_from_slice(&batch);
    }
    all.freeze()
}

/// Answers ApiVersions and Fetch on one connection, as a Kafka broker holding `topic` with
/// records 5..7 would.
async fn fake_source(listener: TcpListener, topic: &'static str) {
    let Ok(mut stream) = listener.accept().await else {
        return;
    };
    while let Ok(mut request) = frame::read_frame(&mut stream, 1 << 20).await {
        let header = frame::decode_request_header(&mut request).unwrap();
        let (version, id) = (header.request_api_version, header.correlation_id);
        let answer = match ApiKey::try_from(header.request_api_key) {
            Ok(ApiKey::ApiVersions) => frame::encode_response(
                version,
                id,
                &ApiVersionsResponse::default().with_api_keys(vec![ApiVersion::default()
                    .with_api_key(ApiKey::Fetch as i16)
                    .with_min_version(4)
                    .with_max_version(12)]),
            ),
            Ok(ApiKey::Fetch) => frame::encode_response(
                version,
                id,
                &FetchResponse::default().with_responses(vec![FetchableTopicResponse::default()
                    .with_topic(topic_name(topic))
                    .with_partitions(vec![PartitionData::default()
                        .with_partition_index(0)
                        .with_high_watermark(7)
                        .with_last_stable_offset(7)
                        .with_log_start_offset(SOURCE_LOG_START)
                        .with_records(Some(source_records()))])]),
            ),
            other => panic!("the fake source got {other:?}"),
        }
        .unwrap();
        if futures_lite::AsyncWriteExt::write_all(&mut stream, &answer)
            .await
            .is_err()
        {
            return;
        }
    }
}

#[test]
fn a_fetch_round_stores_the_source_batches_at_their_offsets() {
    let dir = temp_dir("mirror-round");
    let mut config = test_config(&dir);
    // One shard owns every partition, so this shard runs the round.
    config.shards.cores = vec![0];
    run_broker(config, |broker| async move {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let source = listener.local_addr().unwrap().to_string();
        glommio::spawn_local(fake_source(listener, "orders")).detach();
        let coordinator = &broker.shard.coordinator;
        let settings = vec![("bootstrap.servers".to_string(), source.clone())];
        let create = CreateMirror {
            name: "dr".into(),
            config: settings,
        };
        coordinator.run(create).await.unwrap().unwrap();
        let add = AddTopicsToMirror {
            mirror: "dr".into(),
            topics: vec![MirroredTopic {
                name: "orders".into(),
                partitions: 1,
                source_topic_id: uuid::Uuid::new_v4(),
            }],
        };
        assert_eq!(coordinator.run(add).await.unwrap(), vec![Ok(())]);
        let partition = owned_partitions(&*broker, Some("dr"))["dr"][0].partition;
        for event in [MirrorEvent::BeginPreparing, MirrorEvent::Prepared] {
            let events = MirrorEvents {
                events: vec![(partition, event)],
            };
            assert!(coordinator.run(events).await.unwrap()[0].is_ok());
        }
        let config =
            shoal_mirror::MirrorConfig::from_pairs([("bootstrap.servers", source.as_str())])
                .unwrap();
        let mut session = Session::new("dr", config);
        session.connect().await.unwrap();
        let mirroring = owned_partitions(&*broker, Some("dr")).remove("dr").unwrap();
        fetch_round(&*broker, &mut session, &mirroring)
            .await
            .unwrap();

        let read = |offset| {
            let broker = broker.clone();
            async move {
                let client = ClientInfo::default();
                let request = fetch_request("orders", 0, offset, 0);
                fetched(&fetch::handle(&call::<FetchRequest>(&broker, 12, &client), request).await)
            }
        };
        let (error, hwm, records) = read(SOURCE_LOG_START).await;
        assert_eq!((error, hwm), (0, 7));
        let mut offsets = Vec::new();
        let mut rest = &records[..];
        while !rest.is_empty() {
            let header = BatchHeader::parse_validated(rest).expect("whole batches");
            offsets.push(header.base_offset);
            rest = &rest[header.size_bytes..];
        }
        assert_eq!(offsets, vec![5, 6], "the source's offsets, byte for byte");
        assert_eq!(&records[..], &source_records()[..]);
        // The source's log start is followed: offsets before 5 are gone here too.
        let (error, _, _) = read(0).await;
        assert_eq!(error, 1, "OFFSET_OUT_OF_RANGE below the log start");
    });
}
