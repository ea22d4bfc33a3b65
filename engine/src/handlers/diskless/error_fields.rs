//! The per-item error fields every Diskless* answer carries.

use shoal_coordinator::ErrorKind;

use crate::kafka::error_codes;

/// (error code, error message) for a per-item outcome.
pub(super) fn error_fields(error: Option<ErrorKind>) -> (i16, Option<String>) {
    match error {
        None => (error_codes::NONE, None),
        Some(e) => (
            error_codes::code_of(Some(e)),
            Some(error_codes::message_of(e).to_string()),
        ),
    }
}
