//! Object stores that hold WAL objects. Each executor owns its own store handle, since glommio
//! file handles belong to the executor that opened them.

mod local;

pub use local::LocalStore;

use bytes::Bytes;

use crate::WalError;

/// The configured back end. An enum rather than a trait object: async methods stay plain
/// `async fn`, and the S3 back end joins as a second variant.
pub enum ObjectStore {
    Local(LocalStore),
}

impl ObjectStore {
    /// Stores `data` under `key` durably: when this returns Ok the object survives a crash.
    pub async fn put(&self, key: &str, data: Bytes) -> Result<(), WalError> {
        match self {
            ObjectStore::Local(store) => store.put(key, data).await,
        }
    }

    /// Reads exactly `len` bytes at `offset`; a missing or short object is an error.
    pub async fn get_range(&self, key: &str, offset: u64, len: usize) -> Result<Bytes, WalError> {
        match self {
            ObjectStore::Local(store) => store.get_range(key, offset, len).await,
        }
    }

    pub async fn delete(&self, key: &str) -> Result<(), WalError> {
        match self {
            ObjectStore::Local(store) => store.delete(key).await,
        }
    }

    /// Every object under `prefix` (one `/` level), with the time it was last written.
    pub async fn list(&self, prefix: &str) -> Result<Vec<ListedObject>, WalError> {
        match self {
            ObjectStore::Local(store) => store.list(prefix).await,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedObject {
    pub key: String,
    pub modified: std::time::SystemTime,
}
