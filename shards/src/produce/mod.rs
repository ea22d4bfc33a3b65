//! The per-shard produce pipeline: buffer → WAL object → upload → commit (in rotation order)
//! → answer the producers.

mod buffer;
mod pipeline;
mod validate;

pub(crate) use pipeline::upload_with_retries;
pub use pipeline::ProducePipeline;
