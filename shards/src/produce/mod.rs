//! The per-shard produce pipeline: buffer → WAL object → upload → commit (in rotation order)
//! → answer the producers.

mod buffer;
mod commit_batch;
mod fanout;
mod pipeline;
pub mod schemas;
mod validate;

pub(crate) use commit_batch::commit_batch;
pub use fanout::CommitFanout;
pub(crate) use pipeline::upload_with_retries;
pub use pipeline::ProducePipeline;
