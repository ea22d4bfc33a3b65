//! Object stores that hold WAL objects. Each executor owns its own store handle, since glommio
//! file handles and sockets belong to the executor that opened them.

mod kinds;
mod local;
mod read_bytes;
pub mod s3;
mod segments;
mod write_fully;

pub use kinds::{ListedObject, LocalLayout, WriteLane};
pub use local::LocalStore;
pub use read_bytes::ReadBytes;

use std::path::PathBuf;

use bytes::Bytes;

use crate::{ObjectBody, WalError};
use s3::{S3Config, S3Store};

/// The configured back end. An enum rather than a trait object: async methods stay plain
/// `async fn`.
pub enum ObjectStore {
    Local(Box<LocalStore>),
    S3(Box<S3Store>),
}

/// Which store to open; cloned into every executor.
#[derive(Debug, Clone)]
pub enum StoreConfig {
    Local { root: PathBuf, layout: LocalLayout },
    S3(Box<S3Config>),
}

impl StoreConfig {
    /// Whether each request costs money (S3 and its kin), so objects are sized by time and
    /// bytes rather than written whenever the store is idle, as a local disk's are.
    pub fn bills_requests(&self) -> bool {
        matches!(self, StoreConfig::S3(_))
    }
}

impl ObjectStore {
    /// Opens the store for the current executor.
    pub fn open(config: &StoreConfig) -> Result<ObjectStore, WalError> {
        Ok(match config {
            StoreConfig::Local { root, layout } => {
                ObjectStore::Local(Box::new(LocalStore::new(root, *layout)?))
            }
            StoreConfig::S3(s3) => ObjectStore::S3(Box::new(S3Store::new(s3)?)),
        })
    }

    /// Requests sent so far by (operation, outcome); none for a local store.
    pub fn request_outcomes(&self) -> Vec<((&'static str, &'static str), u64)> {
        match self {
            ObjectStore::Local(_) => Vec::new(),
            ObjectStore::S3(s3) => s3.request_outcomes(),
        }
    }

    /// Fails with a clear error if the store cannot serve (bucket missing, credentials
    /// refused, endpoint down; a local store's directory gone).
    pub async fn check(&self) -> Result<(), WalError> {
        match self {
            // One stat: too small to take off the executor.
            ObjectStore::Local(local) => match std::fs::metadata(local.root()) {
                Ok(meta) if meta.is_dir() => Ok(()),
                Ok(_) => Err(WalError::io(
                    &local.root().display().to_string(),
                    std::io::Error::other("not a directory"),
                )),
                Err(e) => Err(WalError::io(&local.root().display().to_string(), e)),
            },
            ObjectStore::S3(store) => store.check_bucket().await,
        }
    }

    /// Deletes several objects (S3: in batches of 1000); returns the keys that are gone.
    pub async fn delete_many(&self, keys: &[String]) -> Result<Vec<String>, WalError> {
        match self {
            ObjectStore::S3(store) => store.delete_many(keys).await,
            ObjectStore::Local(store) => {
                let mut deleted = Vec::with_capacity(keys.len());
                for key in keys {
                    match store.delete(key).await {
                        Ok(()) => deleted.push(key.clone()),
                        Err(e) => {
                            tracing::warn!(%key, error = %e, "could not delete an object; tried again at the next collection (does the store allow Delete?)")
                        }
                    }
                }
                Ok(deleted)
            }
        }
    }

    /// Where `key` is kept: a local file (and the byte its object starts at, in a segment),
    /// or the object's key in the bucket.
    pub fn location(&self, key: &str) -> String {
        match self {
            ObjectStore::Local(store) => store.location(key),
            ObjectStore::S3(_) => key.to_string(),
        }
    }

    /// Stores `data` under `key` durably: when this returns Ok the object survives a crash.
    pub async fn put(&self, key: &str, data: impl Into<ObjectBody>) -> Result<(), WalError> {
        self.put_in(WriteLane::Produce, key, data).await
    }

    /// `put`, in the given lane.
    pub async fn put_in(
        &self,
        lane: WriteLane,
        key: &str,
        data: impl Into<ObjectBody>,
    ) -> Result<(), WalError> {
        match self {
            ObjectStore::Local(store) => store.put_in(lane, key, data.into()).await,
            // The request body is one buffer (gathered here when the object is in pieces).
            ObjectStore::S3(store) => store.put(key, data.into().to_contiguous()).await,
        }
    }

    /// Reads exactly `len` bytes at `offset`; a missing or short object is an error.
    pub async fn get_range(&self, key: &str, offset: u64, len: usize) -> Result<Bytes, WalError> {
        Ok(self.read_range(key, offset, len).await?.to_bytes())
    }

    /// `get_range`, in the buffer the store read it into where that is this executor's own
    /// (the local store's): for readers that copy what they read before it leaves the thread.
    pub async fn read_range(
        &self,
        key: &str,
        offset: u64,
        len: usize,
    ) -> Result<ReadBytes, WalError> {
        match self {
            ObjectStore::Local(store) => store.read_range(key, offset, len).await,
            ObjectStore::S3(store) => store.get_range(key, offset, len).await.map(ReadBytes::from),
        }
    }

    /// The object's size, or None when there is no such object.
    pub async fn size(&self, key: &str) -> Result<Option<u64>, WalError> {
        match self {
            ObjectStore::Local(store) => store.size(key).await,
            ObjectStore::S3(store) => store.size(key).await,
        }
    }

    pub async fn delete(&self, key: &str) -> Result<(), WalError> {
        match self {
            ObjectStore::Local(store) => store.delete(key).await,
            ObjectStore::S3(store) => store.delete(key).await,
        }
    }

    /// Every object under `prefix` (one `/` level), with the time it was last written.
    pub async fn list(&self, prefix: &str) -> Result<Vec<ListedObject>, WalError> {
        match self {
            ObjectStore::Local(store) => store.list(prefix).await,
            ObjectStore::S3(store) => store.list(prefix).await,
        }
    }
}
