//! WAL objects: record-batch validation, the multi-segment object format and the object stores
//! that hold them.

pub mod batch;
pub mod body;
pub mod committed;
pub mod compaction;
pub mod compress;
pub mod control;
pub mod decompress;
pub mod error;
pub mod object;
pub mod recompress;
pub mod records;
pub mod store;

pub use batch::{BatchHeader, BATCH_HEADER_BYTES};
pub use body::ObjectBody;
pub use error::WalError;
pub use object::{ObjectBuilder, SegmentPlacement};
pub use store::s3::{HttpConfig, S3Config};
pub use store::{
    ListedObject, LocalLayout, LocalStore, ObjectStore, ReadBytes, StoreConfig, WriteLane,
};
