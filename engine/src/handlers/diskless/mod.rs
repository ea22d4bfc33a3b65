//! Handlers of the KIP-1164 Diskless* APIs, one file each: the coordinator's operations on the
//! wire, so a broker on another node or an operator tool can call them.

mod commit_file;
mod create_partitions;
mod delete_records;
mod delete_topics;
mod describe_files;
mod error_fields;
mod find_batches;
mod list_offsets;

pub use commit_file::commit_file;
pub use create_partitions::create_partitions;
pub use delete_records::delete_records;
pub use delete_topics::delete_topics;
pub use describe_files::describe_files;
pub use find_batches::find_batches;
pub use list_offsets::list_offsets;
