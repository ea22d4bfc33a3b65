//! Handlers of the KIP-1164 Diskless* APIs, one file each: the coordinator's operations on the
//! wire, so a broker on another node or an operator tool can call them.

mod commit_file;
mod create_partitions;
mod delete_records;
mod delete_topics;
mod describe_files;
mod find_batches;
mod list_offsets;

pub use commit_file::commit_file;
pub use create_partitions::create_partitions;
pub use delete_records::delete_records;
pub use delete_topics::delete_topics;
pub use describe_files::describe_files;
pub use find_batches::find_batches;
pub use list_offsets::list_offsets;

use shoal_coordinator::ErrorKind;

use crate::kafka::error_codes;

/// (error code, error message) for a per-item outcome.
fn error_fields(error: Option<ErrorKind>) -> (i16, Option<String>) {
    match error {
        None => (error_codes::NONE, None),
        Some(e) => (
            error_codes::code_of(Some(e)),
            Some(error_codes::message_of(e).to_string()),
        ),
    }
}
