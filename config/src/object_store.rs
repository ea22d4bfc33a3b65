//! `[object_store]`: where WAL objects are kept, the local directory or S3.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use shoal_wal::{HttpConfig, LocalLayout, S3Config, StoreConfig};

/// The kind of object store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreKind {
    Local,
    S3,
}

/// How the local store writes objects; see `shoal_wal::LocalLayout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LocalLayoutKind {
    Files,
    Segments,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ObjectStoreConfig {
    pub kind: StoreKind,
    /// Local only: one file per object, or objects appended to segment files.
    pub local_layout: LocalLayoutKind,
    /// Local segments: the size each segment file is preallocated to.
    pub segment_bytes: u64,
    /// S3: e.g. "http://127.0.0.1:9000".
    pub endpoint: String,
    pub bucket: String,
    pub region: String,
    /// Prepended to every object key.
    pub prefix: String,
    /// Path-style addressing (`endpoint/bucket/key`); unset: virtual-host style for AWS
    /// endpoints (`*.amazonaws.com`), path style for others (MinIO, s3s-fs, Garage).
    pub path_style: Option<bool>,
    /// For https endpoints: a PEM file of CAs to trust besides the system's.
    pub ca_file: Option<PathBuf>,
    /// Credentials; the AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN
    /// environment variables are used where these are not set.
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub session_token: Option<String>,
    pub multipart_threshold_bytes: usize,
    pub part_size_bytes: usize,
    pub max_connections: usize,
    pub connect_timeout_ms: u64,
    pub first_byte_timeout_ms: u64,
    pub request_timeout_ms: u64,
}

impl Default for ObjectStoreConfig {
    fn default() -> Self {
        ObjectStoreConfig {
            kind: StoreKind::Local,
            local_layout: LocalLayoutKind::Segments,
            segment_bytes: 64 << 20,
            endpoint: String::new(),
            bucket: String::new(),
            region: "us-east-1".to_string(),
            prefix: String::new(),
            path_style: None,
            ca_file: None,
            access_key_id: None,
            secret_access_key: None,
            session_token: None,
            multipart_threshold_bytes: 64 << 20,
            part_size_bytes: 16 << 20,
            max_connections: 16,
            connect_timeout_ms: 2_000,
            first_byte_timeout_ms: 10_000,
            request_timeout_ms: 30_000,
        }
    }
}

impl ObjectStoreConfig {
    fn is_aws(&self) -> bool {
        let after_scheme = self.endpoint.split_once("://").map_or("", |(_, rest)| rest);
        let host = after_scheme.split(['/', ':']).next().unwrap_or("");
        host.ends_with(".amazonaws.com")
    }

    /// The store the broker's objects are kept in.
    pub fn store(&self, data_dir: &Path) -> StoreConfig {
        match self.kind {
            StoreKind::Local => StoreConfig::Local {
                root: data_dir.join("objects"),
                layout: match self.local_layout {
                    LocalLayoutKind::Files => LocalLayout::Files,
                    LocalLayoutKind::Segments => LocalLayout::Segments {
                        segment_bytes: self.segment_bytes,
                    },
                },
            },
            StoreKind::S3 => {
                let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
                StoreConfig::S3(Box::new(S3Config {
                    endpoint: self.endpoint.clone(),
                    bucket: self.bucket.clone(),
                    region: self.region.clone(),
                    key_prefix: self.prefix.clone(),
                    path_style: self.path_style.unwrap_or(!self.is_aws()),
                    ca_file: self.ca_file.clone(),
                    access_key_id: self
                        .access_key_id
                        .clone()
                        .or_else(|| env("AWS_ACCESS_KEY_ID")),
                    secret_access_key: self
                        .secret_access_key
                        .clone()
                        .or_else(|| env("AWS_SECRET_ACCESS_KEY")),
                    session_token: self
                        .session_token
                        .clone()
                        .or_else(|| env("AWS_SESSION_TOKEN")),
                    multipart_threshold_bytes: self.multipart_threshold_bytes,
                    part_size_bytes: self.part_size_bytes,
                    http: HttpConfig {
                        max_connections: self.max_connections,
                        connect_timeout: Duration::from_millis(self.connect_timeout_ms),
                        first_byte_timeout: Duration::from_millis(self.first_byte_timeout_ms),
                        request_timeout: Duration::from_millis(self.request_timeout_ms),
                        // A ranged read is at most one object.
                        max_response_bytes: i32::MAX as usize,
                    },
                }))
            }
        }
    }
}
