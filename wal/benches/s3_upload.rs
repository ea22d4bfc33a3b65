//! Upload throughput of Shoal's S3 path alone: concurrent `put`s of objects of one size from
//! one executor, against the server in SHOAL_S3_ENDPOINT (driven by scripts/s3_bench.py, which
//! compares the result with boto3 against the same server). Prints one JSON line.
//!
//! Environment: SHOAL_S3_ENDPOINT, SHOAL_S3_BUCKET, SHOAL_S3_KEY, SHOAL_S3_SECRET,
//! SHOAL_S3_OBJECT_BYTES, SHOAL_S3_SECONDS, SHOAL_S3_CONCURRENCY.

use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use glommio::LocalExecutorBuilder;
use shoal_wal::{HttpConfig, ObjectStore, S3Config, StoreConfig};

fn env(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

fn main() {
    let Ok(endpoint) = std::env::var("SHOAL_S3_ENDPOINT") else {
        println!("set SHOAL_S3_ENDPOINT (scripts/s3_bench.py does) to run this benchmark");
        return;
    };
    let object_bytes: usize = env("SHOAL_S3_OBJECT_BYTES", "8388608").parse().unwrap();
    let seconds: f64 = env("SHOAL_S3_SECONDS", "5").parse().unwrap();
    let concurrency: usize = env("SHOAL_S3_CONCURRENCY", "8").parse().unwrap();
    let config = StoreConfig::S3(Box::new(S3Config {
        endpoint,
        bucket: env("SHOAL_S3_BUCKET", "shoal"),
        region: "us-east-1".into(),
        key_prefix: "upload-bench".into(),
        path_style: true,
        access_key_id: Some(env("SHOAL_S3_KEY", "")),
        secret_access_key: Some(env("SHOAL_S3_SECRET", "")),
        session_token: None,
        ca_file: None,
        multipart_threshold_bytes: usize::MAX,
        part_size_bytes: 16 << 20,
        http: HttpConfig {
            max_connections: concurrency,
            connect_timeout: Duration::from_secs(2),
            first_byte_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(60),
            max_response_bytes: 1 << 20,
        },
    }));
    let (puts, elapsed) = LocalExecutorBuilder::default()
        .io_memory(1 << 20)
        .spawn(move || async move {
            let store = Rc::new(ObjectStore::open(&config).unwrap());
            let data: Bytes = (0..object_bytes)
                .map(|i| (i % 251) as u8)
                .collect::<Vec<_>>()
                .into();
            let started = Instant::now();
            let deadline = started + Duration::from_secs_f64(seconds);
            let workers: Vec<_> = (0..concurrency)
                .map(|w| {
                    let store = store.clone();
                    let data = data.clone();
                    glommio::spawn_local(async move {
                        let mut n = 0usize;
                        while Instant::now() < deadline {
                            store
                                .put(&format!("wal/{w}-{n}"), data.clone())
                                .await
                                .unwrap();
                            n += 1;
                        }
                        n
                    })
                })
                .collect();
            let mut puts = 0;
            for w in workers {
                puts += w.await;
            }
            (puts, started.elapsed().as_secs_f64())
        })
        .unwrap()
        .join()
        .unwrap();
    let result = serde_json::json!({
        "object_bytes": object_bytes,
        "concurrency": concurrency,
        "puts": puts,
        "mb_per_s": ((puts * object_bytes) as f64 / elapsed / 1e6 * 100.0).round() / 100.0,
    });
    println!("{result}");
}
